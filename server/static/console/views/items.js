// A channel's current state: its open questions, its open action items by owner and
// its decisions in force, each a <details> whose summary is the item and whose body is its
// history, every change with its evidence (the quoted words and the messages it rests on) and
// the digests that mention it: one click from the channel page.

import { gql } from "../graphql.js";
import { h, link, notice, when } from "../dom.js";

const ITEM = `id kind status text owner firstSaidAt messageIds
  history { fromStatus toStatus at reason evidenceMessageIds pointer { messageId resolvedText }
            digest { id title } }
  mentions { digest { id title createdAt } }`;
// The newest of each list, within the API's cost limit for one request (histories included).
const SHOWN = { questions: 20, actions: 30, decisions: 20 };
const STATE = `query($id: ID!) {
  questions: openQuestions(filter: {channelId: $id}, first: ${SHOWN.questions}) {
    nodes { ${ITEM} } pageInfo { hasNextPage } }
  actions: actionItems(filter: {channelId: $id, status: OPEN}, first: ${SHOWN.actions}) {
    nodes { ${ITEM} } pageInfo { hasNextPage } }
  decisions: decisions(filter: {channelId: $id, status: IN_FORCE}, first: ${SHOWN.decisions}) {
    nodes { ${ITEM} } pageInfo { hasNextPage } }
}`;

const STATUS_WORDS = {
  OPEN: "open", ANSWERED: "answered", DROPPED: "dropped", DONE: "done", CANCELLED: "cancelled",
  IN_FORCE: "in force", SUPERSEDED: "superseded", REVERSED: "reversed", CURRENT: "current",
  CONFLICT: "in conflict",
};

function digestLink(digest) {
  return digest ? link(`#/digest/${encodeURIComponent(digest.id)}`, digest.title) : null;
}

function historyEntry(event) {
  const state = event.fromStatus
    ? `${STATUS_WORDS[event.fromStatus]} → ${STATUS_WORDS[event.toStatus]}`
    : STATUS_WORDS[event.toStatus];
  return h("li", { class: "item-event" },
    h("strong", {}, state), " ", h("small", {}, when(event.at)), " · ", event.reason,
    event.pointer ? h("blockquote", { class: "evidence", dataset: { messageId: event.pointer.messageId } },
      event.pointer.resolvedText) : null,
    h("small", { class: "evidence-ids" }, `messages ${event.evidenceMessageIds.join(", ")}`),
    event.digest ? [" · ", digestLink(event.digest)] : null);
}

function itemEntry(item) {
  return h("li", { class: "tracked-item", dataset: { item: item.id } },
    h("details", {},
      h("summary", {}, item.text, " ",
        h("small", {}, `${item.owner ? `${item.owner} · ` : ""}since ${when(item.firstSaidAt)}`)),
      h("h4", {}, "History"),
      h("ol", { class: "item-history" }, item.history.map(historyEntry)),
      h("h4", {}, "Mentioned in"),
      h("ul", { class: "item-mentions" }, item.mentions.map((m) => h("li", {}, digestLink(m.digest))))));
}

function list(items, empty) {
  return items.length ? h("ul", { class: "tracked-items" }, items.map(itemEntry)) : notice(empty);
}

function more(page, count) {
  return page.pageInfo.hasNextPage ? h("p", { class: "muted" }, `The newest ${count} are shown.`) : null;
}

/** Action items grouped by owner (those without one last), each group under its owner. */
function byOwner(items) {
  if (!items.length) return notice("No open action items.");
  const groups = new Map();
  for (const item of items) {
    const owner = item.owner ?? "";
    if (!groups.has(owner)) groups.set(owner, []);
    groups.get(owner).push(item);
  }
  const owners = [...groups.keys()].sort((a, b) => (a === "") - (b === "") || a.localeCompare(b));
  return owners.map((owner) => h("section", { class: "owner-group", dataset: { owner } },
    h("h4", {}, owner || "No owner named"), list(groups.get(owner), "")));
}

/** The channel's current state as one section (one API request). */
export async function channelStateSection(channelId) {
  const data = await gql(STATE, { id: channelId });
  return h("section", { class: "channel-state", "aria-labelledby": "channel-state-heading" },
    h("h2", { id: "channel-state-heading" }, "Current state"),
    h("h3", {}, "Open questions"), list(data.questions.nodes, "No open questions."),
    more(data.questions, SHOWN.questions),
    h("h3", {}, "Open action items"), byOwner(data.actions.nodes), more(data.actions, SHOWN.actions),
    h("h3", {}, "Decisions in force"), list(data.decisions.nodes, "No decisions in force."),
    more(data.decisions, SHOWN.decisions));
}
