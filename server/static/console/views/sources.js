// An item's sources: its cited messages shown in their conversation (one neighbour either side),
// and for a pointer the pointed revision's text with exactly normalizedText[charStart:charEnd]
// marked, by position (code points, as the API counts them), never by searching for the quote.

import { gql } from "../graphql.js";
import { h, markRanges, notice, when } from "../dom.js";

const MESSAGES = `query($filter: MessageFilter!, $after: String) {
  messages(filter: $filter, first: 100, after: $after) {
    nodes { messageId author ts normalizedText revision replyTo }
    pageInfo { hasNextPage endCursor } } }`;

/**
 * A channel's messages from `since` on, oldest first, read page by page only as far as the cited
 * ids (and the neighbour after the last of them) need; later calls continue where it stopped.
 */
export class ChannelMessages {
  constructor(channelId, since = null, maxPages = 50) {
    this.filter = { channelId, since };
    this.pagesLeft = maxPages;
    this.list = [];
    this.index = new Map();
    this.after = null;
    this.exhausted = false;
    this.reading = Promise.resolve();
  }

  satisfied(ids) {
    const positions = ids.map((id) => this.index.get(id));
    if (positions.some((p) => p === undefined)) return false;
    return Math.max(...positions) < this.list.length - 1;
  }

  /** One reader at a time: two items opened at once must not read the same pages twice. */
  find(ids) {
    const result = this.reading.then(() => this.read(ids));
    this.reading = result.catch(() => {});
    return result;
  }

  async read(ids) {
    while (!this.exhausted && this.pagesLeft > 0 && !this.satisfied(ids)) {
      this.pagesLeft -= 1;
      const page = (await gql(MESSAGES, { filter: this.filter, after: this.after })).messages;
      for (const message of page.nodes) {
        this.index.set(message.messageId, this.list.length);
        this.list.push(message);
      }
      this.after = page.pageInfo.endCursor;
      this.exhausted = !page.pageInfo.hasNextPage;
    }
    return { list: this.list, index: this.index };
  }
}

/** The pointed revision's text: the pointer's own copy, else the message's when it is that revision. */
export function pointedText(pointer, message) {
  if (typeof pointer.revisionText === "string") return pointer.revisionText;
  if (message && message.revision === pointer.revision) return message.normalizedText;
  return null;
}

/** The text with the pointer's characters in a <mark>; a notice when they cannot be placed. */
export function pointerText(pointer, message) {
  const text = pointedText(pointer, message);
  if (text === null) return notice(`The text of revision ${pointer.revision} is not available.`, "error");
  const { fragment, marks } = markRanges(text, [{ start: pointer.charStart, end: pointer.charEnd }], () => ({
    class: "pointer",
    "data-char-start": pointer.charStart,
    "data-char-end": pointer.charEnd,
  }));
  if (!marks[0]) {
    return notice(`The pointer [${pointer.charStart}, ${pointer.charEnd}) is outside the text.`, "error");
  }
  const note = message && message.revision !== pointer.revision
    ? h("p", { class: "muted" }, `Quoted from revision ${pointer.revision}; the message is at revision ${message.revision} now.`)
    : null;
  return [h("p", { class: "message-text pointed" }, fragment), note];
}

function messageArticle(message, { cited, pointer }) {
  const body = pointer ? pointerText(pointer, message) : h("p", { class: "message-text" }, message.normalizedText);
  return h(
    "article",
    { class: cited ? "message cited" : "message context", dataset: { messageId: message.messageId } },
    h("header", {},
      h("strong", {}, message.author), " ",
      h("time", { datetime: message.ts }, when(message.ts)),
      cited ? h("span", { class: "badge" }, pointer ? "pointed" : "cited") : null),
    body,
  );
}

/**
 * Renders into `container` the sources of an item {pointer, messageIds}. With `messages`
 * (a ChannelMessages), cited messages appear among their neighbours; without, the pointer's
 * text alone.
 */
export async function renderSources(container, item, messages) {
  const pointer = item.pointer ?? null;
  const ids = [...new Set([pointer?.messageId, ...(item.messageIds ?? [])].filter(Boolean))];
  if (!ids.length) {
    container.replaceChildren(notice("This item cites no message."));
    return;
  }
  if (!messages) {
    container.replaceChildren(...[pointer ? messageArticle(
      { messageId: pointer.messageId, author: `message ${pointer.messageId}`, ts: null, revision: pointer.revision },
      { cited: true, pointer },
    ) : notice("Open the item's digest to read its messages.")]);
    return;
  }
  container.replaceChildren(notice("Loading messages…"));
  let loaded;
  try {
    loaded = await messages.find(ids);
  } catch (error) {
    container.replaceChildren(notice(`Could not load the messages: ${error.message}`, "error"));
    if (pointer) container.append(...[pointerText(pointer, null)].flat().filter(Boolean));
    return;
  }
  const positions = new Set();
  for (const id of ids) {
    const position = loaded.index.get(id);
    if (position === undefined) continue;
    for (const p of [position - 1, position, position + 1]) {
      if (p >= 0 && p < loaded.list.length) positions.add(p);
    }
  }
  const nodes = [];
  let previous = null;
  for (const position of [...positions].sort((a, b) => a - b)) {
    if (previous !== null && position > previous + 1) nodes.push(h("p", { class: "gap", "aria-hidden": "true" }, "…"));
    const message = loaded.list[position];
    const cited = ids.includes(message.messageId);
    const itsPointer = pointer && pointer.messageId === message.messageId ? pointer : null;
    nodes.push(messageArticle(message, { cited, pointer: itsPointer }));
    previous = position;
  }
  for (const id of ids.filter((i) => !loaded.index.has(i))) {
    nodes.push(notice(`Message ${id} was not found in this channel.`, "error"));
  }
  container.replaceChildren(...nodes);
}
