// digestd's GraphiQL page (server/graphiql.html), adapted from Strawberry's template (MIT).
// A separate file rather than an inline script, so the page's Content-Security-Policy allows
// scripts from digestd only. The query travels in the URL as `q`: `query` in the URL of
// /graphql runs it (GET) instead of showing the page.
"use strict";

const parameters = Object.fromEntries(new URLSearchParams(window.location.search));

function updateURL(changes) {
  Object.assign(parameters, changes);
  const kept = Object.entries(parameters).filter(([, value]) => Boolean(value));
  history.replaceState(null, "", "?" + new URLSearchParams(kept).toString());
}

const EXAMPLE_QUERY = `# digestd's GraphQL API. With DIGESTD_API_TOKENS set, open the Headers tab below and
# paste {"Authorization": "Bearer <token>"}.
#
#   Run: Ctrl-Enter (or the play button)   Complete: Ctrl-Space
#
{
  channels(first: 5) {
    nodes { id name }
  }
}
`;

// Queries and mutations over HTTP; subscriptions (jobProgress) over WebSocket at the same path
// (graphql-transport-ws). GraphiQL sends the Headers tab as the connection_init payload, so a
// pasted {"Authorization": "Bearer <token>"} authenticates the WebSocket too (a browser cannot
// set headers on one).
const endpoint = new URL(window.location.pathname, window.location.origin);
const subscriptionUrl = (endpoint.protocol === "https:" ? "wss:" : "ws:") + "//" + endpoint.host + endpoint.pathname;
const fetcher = GraphiQL.createFetcher({ url: endpoint.href, subscriptionUrl });
const explorer = GraphiQLPluginExplorer.explorerPlugin();

function DigestdGraphiQL() {
  const [query, setQuery] = React.useState(parameters.q || EXAMPLE_QUERY);
  const [variables, setVariables] = React.useState(parameters.variables);

  return React.createElement(GraphiQL, {
    fetcher,
    plugins: [explorer],
    query,
    variables,
    onEditQuery(edited) {
      setQuery(edited);
      updateURL({ q: edited });
    },
    onEditVariables(edited) {
      setVariables(edited);
      updateURL({ variables: edited });
    },
    defaultEditorToolsVisibility: true,
    inputValueDeprecation: true,
    isHeadersEditorEnabled: true,
    // Headers (a bearer token) stay in this browser's localStorage, never in the URL.
    shouldPersistHeaders: true,
  });
}

ReactDOM.createRoot(document.getElementById("graphiql")).render(React.createElement(DigestdGraphiQL));
