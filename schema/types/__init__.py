"""The GraphQL types, grouped by domain, with their ids, scalars, enums, inputs and Relay
connections and pages."""
