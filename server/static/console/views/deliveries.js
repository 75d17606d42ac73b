// Deliveries (#/deliveries?state=DEAD&after=CURSOR): the destinations digests and job events go
// to (name, kind, the host of their URL, the events they take; never a secret: the API has no
// field that returns one), and the deliveries, newest first, with their state, attempts, last
// error and next attempt. The state filter shows the dead letters; "Retry" queues a dead one
// again (retryDelivery, writers), with the same delivery id. Pages follow the connection's
// cursors: "Newer" and "Older" links keep the state and the cursor in the URL.

import { gql } from "../graphql.js";
import { fill, h, link, notice, pageHeading, plural, when } from "../dom.js";

const STATES = ["PENDING", "DELIVERING", "DELIVERED", "DEAD"];
const PAGE_SIZE = 20;

const DESTINATIONS = `query { destinations(first: 100) { totalCount
  nodes { id name kind hint events createdAt } } }`;
const DELIVERIES = `query($filter: DeliveryFilter, $first: Int, $after: String, $last: Int, $before: String) {
  deliveries(filter: $filter, first: $first, after: $after, last: $last, before: $before) {
    totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    nodes { id deliveryId event state attempts nextAttemptAt lastError createdAt deliveredAt
      digestId jobId destination { name kind } } } }`;
const RETRY = `mutation($id: ID!) { retryDelivery(id: $id) {
  __typename ... on Delivery { state attempts nextAttemptAt }
  ... on InvalidInputError { message } ... on NotFoundError { message } } }`;

function word(value) {
  return value.toLowerCase().replaceAll("_", " ");
}

function deliveriesHref(params) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v));
  const text = query.toString();
  return text ? `#/deliveries?${text}` : "#/deliveries";
}

function destinationsTable(connection) {
  if (connection === null) return notice("The destinations could not be read with this token.", "error");
  if (!connection.nodes.length) {
    return notice("No destinations yet: an admin declares them (createDestination, `digestd destination add`).");
  }
  return h("table", { class: "listing destinations" },
    h("thead", {}, h("tr", {}, ["Name", "Kind", "Host", "Events", "Declared"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, connection.nodes.map((d) => h("tr", { dataset: { destinationId: d.id } },
      h("td", {}, d.name),
      h("td", {}, word(d.kind)),
      h("td", {}, d.hint || "—"),
      h("td", {}, d.events.length ? d.events.map(word).join(", ") : "schedules only"),
      h("td", {}, when(d.createdAt))))));
}

function retryButton(delivery, row) {
  const status = h("span", { class: "muted", role: "status" });
  const button = h("button", {
    type: "button",
    class: "retry",
    onclick: async () => {
      button.disabled = true;
      try {
        const result = (await gql(RETRY, { id: delivery.id })).retryDelivery;
        if (result.__typename === "Delivery") {
          row.dataset.state = result.state;
          row.querySelector(".state").textContent = word(result.state);
          row.querySelector(".attempts").textContent = String(result.attempts);
          row.querySelector(".next").textContent = when(result.nextAttemptAt);
          status.textContent = "Queued again.";
          button.remove();
        } else {
          status.textContent = result.message;
          button.disabled = false;
        }
      } catch (error) {
        status.textContent = error.message || String(error);
        button.disabled = false;
      }
    },
  }, "Retry");
  return [button, " ", status];
}

function deliveryRow(delivery) {
  const row = h("tr", { class: "delivery", dataset: { deliveryId: delivery.id, state: delivery.state } });
  const subject = delivery.digestId
    ? link(`#/digest/${encodeURIComponent(delivery.digestId)}`, "digest")
    : delivery.jobId ? link(`#/job/${encodeURIComponent(delivery.jobId)}`, "job") : "—";
  fill(row,
    h("td", {}, delivery.destination ? `${delivery.destination.name} (${word(delivery.destination.kind)})` : "—"),
    h("td", {}, word(delivery.event), " · ", subject),
    h("td", { class: "state" }, word(delivery.state)),
    h("td", { class: "attempts" }, String(delivery.attempts)),
    h("td", { class: "last-error" }, delivery.lastError || "—"),
    h("td", { class: "next" }, when(delivery.nextAttemptAt)),
    h("td", {}, when(delivery.deliveredAt ?? delivery.createdAt)),
    h("td", {}, delivery.state === "DEAD" ? retryButton(delivery, row) : null));
  return row;
}

function stateFilter(current) {
  return h("nav", { class: "state-filter", "aria-label": "By state" },
    h("ul", { class: "inline" }, [null, ...STATES].map((state) => h("li", {},
      link(deliveriesHref({ state }), state ? (state === "DEAD" ? "dead letters" : word(state)) : "all",
        { "aria-current": (state ?? "") === (current ?? "") ? "true" : null })))));
}

export async function deliveriesPage(view) {
  const state = STATES.includes(view.query.get("state")) ? view.query.get("state") : null;
  const after = view.query.get("after");
  const before = view.query.get("before");
  const paging = before ? { last: PAGE_SIZE, before } : { first: PAGE_SIZE, after };
  const [destinations, deliveries] = await Promise.all([
    gql(DESTINATIONS),
    gql(DELIVERIES, { filter: { state }, ...paging }),
  ]);
  if (!view.isCurrent()) return;
  const page = deliveries.deliveries;
  const info = page.pageInfo;
  // Forward pages (after) always have newer ones before them; backward pages (before) say so.
  const newer = info.startCursor && (after || (before && info.hasPreviousPage))
    ? link(deliveriesHref({ state, before: info.startCursor }), "Newer deliveries") : null;
  const older = info.endCursor && (before || info.hasNextPage)
    ? link(deliveriesHref({ state, after: info.endCursor }), "Older deliveries") : null;
  fill(view.main,
    pageHeading("Deliveries"),
    h("section", { class: "destinations-section" },
      h("h2", {}, "Destinations"),
      destinationsTable(destinations.destinations)),
    h("section", { class: "deliveries-section" },
      h("h2", {}, "Deliveries"),
      stateFilter(state),
      h("p", { class: "muted", role: "status" },
        `${plural(page.totalCount, state ? `${word(state)} delivery` : "delivery").replace(/ys$/, "ies")}, newest first.`),
      page.nodes.length
        ? h("table", { class: "listing deliveries" },
          h("thead", {}, h("tr", {}, ["Destination", "What", "State", "Attempts", "Last error", "Next attempt", "Delivered / queued", ""]
            .map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", {}, page.nodes.map(deliveryRow)))
        : notice(state ? `No ${state === "DEAD" ? "dead letters" : `${word(state)} deliveries`}.` : "No deliveries yet."),
      h("p", { class: "pager" }, newer, newer && older ? " · " : null, older)));
}
