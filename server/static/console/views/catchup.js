// A person's catch-up (#/catchup?person=NAME&since=ISO): the channels that need them most first,
// each with the questions put to them, their open action items, the messages naming them and
// the decisions since, every entry with the exact words of the messages it rests on. The form
// keeps the person and the start in the URL, so a catch-up can be linked and reloaded; "Mark
// read" moves the person's read marker of a channel to the time of this catch-up (writers). The
// catch-up downloads as Markdown, HTML or JSON (views/downloads.js).

import { gql } from "../graphql.js";
import { fill, h, link, notice, pageHeading, plural, when } from "../dom.js";
import { channelHref } from "./channels.js";
import { downloadLinks } from "./downloads.js";

const CATCH_UP = `query($p: String!, $since: DateTime) { catchUp(person: $p, since: $since) {
  person known handles since defaultSince generatedAt truncated
  channelCount channels(first: 10) { channelId channelName serverName since rank score
    counts { questions actionItems mentions decisions total }
    entries(first: 30) { kind text at status owner
      citations { messageId externalId author at quote } } } } }`;
const MARK_READ = `mutation($p: String!, $c: ID!, $u: DateTime) { markRead(person: $p, channelId: $c, until: $u) {
  __typename ... on ReadMarker { readUntil } ... on InvalidInputError { message } ... on NotFoundError { message } } }`;

const KINDS = [
  ["QUESTION", "Questions put to them"],
  ["ACTION_ITEM", "Their open action items"],
  ["MENTION", "Mentions"],
  ["DECISION", "Decisions"],
];

/** An ISO time as a datetime-local input shows it: local wall-clock time, to the minute. */
function localInput(iso) {
  const date = new Date(iso);
  if (!iso || Number.isNaN(date.getTime())) return "";
  return new Date(date.getTime() - date.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
}

function citation(cited) {
  return h("figure", { class: "catchup-citation", dataset: { messageId: cited.messageId } },
    h("blockquote", { class: "evidence" }, cited.quote),
    h("figcaption", {}, `${cited.author} · ${when(cited.at)} · message ${cited.externalId}`));
}

function entry(item) {
  const detail = [item.owner && item.kind === "QUESTION" ? `asked by ${item.owner}` : null,
    item.kind === "DECISION" && item.status ? item.status.toLowerCase().replace("_", " ") : null,
    when(item.at)].filter(Boolean).join(" · ");
  return h("li", { class: "catchup-entry", dataset: { kind: item.kind } },
    h("p", {}, item.kind === "MENTION" ? null : item.text, item.kind === "MENTION" ? null : " ",
      h("small", {}, detail)),
    item.citations.map(citation));
}

function countsLine(counts) {
  const parts = [[counts.questions, "open question"], [counts.actionItems, "action item"],
    [counts.mentions, "mention"], [counts.decisions, "decision"]];
  return parts.filter(([n]) => n).map(([n, word]) => plural(n, word)).join(", ");
}

function channelSection(channel, person, generatedAt) {
  const status = h("span", { class: "muted", role: "status" });
  const name = channel.serverName ? `${channel.serverName} / ${channel.channelName}` : channel.channelName;
  const mark = h("button", {
    type: "button",
    class: "mark-read",
    onclick: async () => {
      mark.disabled = true;
      const result = (await gql(MARK_READ, { p: person, c: channel.channelId, u: generatedAt })).markRead;
      status.textContent = result.__typename === "ReadMarker"
        ? `Read up to ${when(result.readUntil)}.` : result.message;
    },
  }, "Mark read");
  return h("section", { class: "catchup-channel", dataset: { channelId: channel.channelId, rank: String(channel.rank) } },
    h("h2", {}, `${channel.rank}. `, link(channelHref(channel.channelId), name)),
    h("p", { class: "catchup-counts" }, `${countsLine(channel.counts)} · since ${when(channel.since)}`,
      " ", mark, " ", status),
    KINDS.map(([kind, heading]) => {
      const items = channel.entries.filter((e) => e.kind === kind);
      return items.length ? [h("h3", {}, heading), h("ul", { class: "catchup-entries" }, items.map(entry))] : null;
    }),
    channel.counts.total > channel.entries.length
      ? h("p", { class: "muted" }, `The first ${channel.entries.length} of ${channel.counts.total} are shown.`) : null);
}

export async function catchUpPage(view) {
  const person = (view.query.get("person") ?? "").trim();
  const since = view.query.get("since") ?? "";
  const personInput = h("input", { id: "catchup-person", name: "person", value: person, required: true, autocomplete: "off" });
  const sinceInput = h("input", { id: "catchup-since", name: "since", type: "datetime-local", value: localInput(since) });
  const form = h("form", {
    class: "search catchup-form",
    onsubmit: (event) => {
      event.preventDefault();
      const params = new URLSearchParams();
      params.set("person", personInput.value.trim());
      if (sinceInput.value) params.set("since", new Date(sinceInput.value).toISOString());
      const target = `#/catchup?${params}`;
      if (location.hash === target) catchUpPage(view);
      else location.hash = target;
    },
  },
  h("label", { for: "catchup-person" }, "Person or handle"), personInput,
  h("label", { for: "catchup-since" }, "Since (optional)"), sinceInput,
  h("button", { type: "submit" }, "Catch up"));
  const results = h("div", { class: "results" });
  fill(view.main, pageHeading("Catch-up"), form, results);
  if (!person) {
    fill(results, notice("What waits on someone across channels: questions put to them, their action items, mentions and decisions, each with the words it rests on. Without a start, each channel starts at their read marker (24 hours ago where none)."));
    return;
  }
  const data = (await gql(CATCH_UP, { p: person, since: since || null })).catchUp;
  if (!view.isCurrent()) return;
  fill(results,
    h("p", { class: "catchup-summary" },
      `${data.person}${data.known ? "" : " (not stored yet: their name is their handle)"} · handles ${data.handles.join(", ")} · `,
      data.since ? `since ${when(data.since)}` : `since each channel's read marker (${when(data.defaultSince)} where none)`),
    downloadLinks("catchups", person, "catch-up", since ? new URLSearchParams({ since }) : null),
    data.truncated ? notice("Only the newest messages and items were read.") : null,
    data.channels.length
      ? data.channels.map((channel) => channelSection(channel, data.person, data.generatedAt))
      : notice(`Nothing waits on ${data.person} in these channels.`),
    data.channelCount > data.channels.length
      ? h("p", { class: "muted" }, `The ${data.channels.length} channels that need them most of ${data.channelCount} are shown.`) : null);
}
