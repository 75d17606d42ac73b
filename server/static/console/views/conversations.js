// A channel's conversations (#/conversations?channel=ID&state=ANSWERED): the threads its digests
// found, newest first, each with its state, participants and size; opening one shows its
// messages as a thread, each reply under the message it answers. Without a channel, a list of
// channels to choose from. Chat text is shown as text only (dom.js).

import { gql } from "../graphql.js";
import { fill, h, link, notice, pageHeading, plural, when } from "../dom.js";
import { channelHref } from "./channels.js";
import { conversationsHref } from "./channel_charts.js";

const PAGE_SIZE = 25;
const STATES = ["ONGOING", "ANSWERED", "UNANSWERED"];
// Deeper replies are drawn at this indentation: a narrow screen keeps room for the text.
const MAX_DEPTH = 5;

const CONVERSATIONS = `query($id: ID!, $filter: ConversationFilter!, $after: String) {
  channel(id: $id) { id name }
  conversations(filter: $filter, first: ${PAGE_SIZE}, after: $after) {
    nodes { id title state participants messageCount firstAt lastAt }
    totalCount pageInfo { hasNextPage endCursor } } }`;
const THREAD = `query($filter: MessageFilter!) { messages(filter: $filter, first: 100) {
  nodes { id messageId author ts normalizedText parent { id } }
  pageInfo { hasNextPage } } }`;
const CHANNELS = `{ channels(first: 100) { nodes { id name serverName } } }`;

/** Channels as links to `href(id)`: the page a section shows when no channel is chosen. */
export async function channelChoice(view, title, href) {
  const channels = (await gql(CHANNELS)).channels.nodes;
  if (!view.isCurrent()) return;
  fill(view.main,
    pageHeading(title),
    channels.length
      ? [h("p", {}, "Choose a channel:"),
          h("ul", { class: "channel-choice" }, channels.map((c) =>
            h("li", {}, link(href(c.id), c.name), c.serverName ? h("small", {}, ` ${c.serverName}`) : null)))]
      : notice("No channels yet: import or ingest messages first."));
}

function stateWord(state) {
  return state.toLowerCase();
}

/** Each message's depth in its thread: 0 for one answering nothing here, else its parent's + 1. */
export function depths(messages) {
  const parentOf = new Map(messages.map((m) => [m.id, m.parent?.id ?? null]));
  const depth = new Map();
  const depthOf = (id, seen = new Set()) => {
    if (depth.has(id)) return depth.get(id);
    const parent = parentOf.get(id);
    const value = parent && parentOf.has(parent) && !seen.has(parent) ? depthOf(parent, seen.add(id)) + 1 : 0;
    depth.set(id, value);
    return value;
  };
  return messages.map((m) => depthOf(m.id));
}

async function renderThread(body, channelId, conversation) {
  const page = (await gql(THREAD, { filter: { channelId, conversationId: conversation.id } })).messages;
  const levels = depths(page.nodes);
  body.replaceChildren(...[
    h("ol", { class: "thread", "aria-label": `Messages of “${conversation.title}”` },
      page.nodes.map((message, index) => h("li", {
        class: `thread-message depth-${Math.min(levels[index], MAX_DEPTH)}`,
        dataset: { messageId: message.messageId, depth: levels[index] },
      },
      h("article", { class: "message" },
        h("header", {}, h("strong", {}, message.author), " ", h("small", {}, when(message.ts)),
          levels[index] ? h("small", { class: "reply-mark" }, " · reply") : null),
        h("div", { class: "message-text" }, message.normalizedText))))),
    page.pageInfo.hasNextPage ? notice("The first 100 messages are shown.") : null,
  ].filter(Boolean));
}

function conversationEntry(channelId, conversation) {
  const body = h("div", { class: "thread-body" }, notice("Loading the messages…"));
  let loaded = false;
  const details = h("details", {
    ontoggle: async () => {
      if (!details.open || loaded) return;
      loaded = true;
      try {
        await renderThread(body, channelId, conversation);
      } catch (error) {
        loaded = false;
        body.replaceChildren(notice(`Could not load the messages: ${error.message}`, "error"));
      }
    },
  },
  h("summary", {},
    h("span", { class: "conversation-title" }, conversation.title), " ",
    h("span", { class: `badge state ${stateWord(conversation.state)}` }, stateWord(conversation.state))),
  h("p", { class: "muted" }, `From ${when(conversation.firstAt)} to ${when(conversation.lastAt)}`),
  body);
  return h("li", { class: "conversation", dataset: { conversation: conversation.id, state: conversation.state } },
    details,
    h("p", { class: "conversation-meta muted" },
      h("span", { class: "participants" }, conversation.participants.join(", ")),
      ` · ${plural(conversation.messageCount, "message")} · last ${when(conversation.lastAt)}`));
}

function stateFilter(channelId, current) {
  const href = (state) => `${conversationsHref(channelId)}${state ? `&state=${state}` : ""}`;
  return h("nav", { class: "state-filter", "aria-label": "By state" },
    h("ul", { class: "inline" }, [null, ...STATES].map((state) => h("li", {},
      link(href(state), state ? stateWord(state) : "all", { "aria-current": (state ?? "") === (current ?? "") ? "true" : null })))));
}

export async function conversationsPage(view) {
  const channelId = view.query.get("channel");
  if (!channelId) {
    await channelChoice(view, "Conversations", conversationsHref);
    return;
  }
  const state = STATES.includes(view.query.get("state")) ? view.query.get("state") : null;
  const data = await gql(CONVERSATIONS, {
    id: channelId,
    filter: { channelId, state },
    after: view.query.get("after"),
  });
  if (!view.isCurrent()) return;
  if (!data.channel) {
    fill(view.main, pageHeading("Channel not found"), notice(`No channel ${channelId}.`, "error"));
    return;
  }
  const page = data.conversations;
  const next = page.pageInfo.hasNextPage
    ? link(`${conversationsHref(channelId)}${state ? `&state=${state}` : ""}&after=${encodeURIComponent(page.pageInfo.endCursor)}`, "Older conversations")
    : null;
  fill(view.main,
    h("p", { class: "crumbs" }, link(channelHref(data.channel.id), `Channel ${data.channel.name}`)),
    pageHeading(`Conversations of ${data.channel.name}`),
    stateFilter(channelId, state),
    h("p", { class: "muted", role: "status" },
      `${plural(page.totalCount, state ? `${stateWord(state)} conversation` : "conversation")}, newest first; open one to read it.`),
    page.nodes.length
      ? h("ul", { class: "conversations" }, page.nodes.map((c) => conversationEntry(channelId, c)))
      : notice(state ? `No ${stateWord(state)} conversations.` : "No conversations yet: a digest finds them when it reads the messages."),
    next);
}
