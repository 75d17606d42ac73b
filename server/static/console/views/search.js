// Knowledge-item search: full-text (websearch syntax) over titles and texts, across digests,
// optionally of one channel; each result says which channel it came from. The query lives in
// the URL (#/search?q=...&kind=...&channel=ID), so a search can be linked and reloaded.

import { gql } from "../graphql.js";
import { fill, h, link, notice, pageHeading, plural } from "../dom.js";
import { channelHref, digestHref } from "./channels.js";
import { POINTER, itemEntry, knowledgeContent } from "./digest.js";

const SEARCH = `query($filter: KnowledgeItemFilter) { knowledgeItems(filter: $filter, first: 50) {
  nodes { id digestId channelId key kind title verbatim content text messageIds createdAt
    ${POINTER} flags { code message } } } }`;

// The kinds are the API's enum (UPPER_CASE), asked of the schema so the choice never drifts.
const KINDS = `{ __type(name: "KnowledgeItemKind") { enumValues { name } } }`;
const CHANNELS = `{ channels(first: 100) { nodes { id name serverName } } }`;

/** Names of channels by id: the first 100 channels, then (one request) any result's channel
 * that is not among them. */
async function channelNames(known, ids) {
  const names = new Map(known.map((c) => [c.id, c.serverName ? `${c.serverName} / ${c.name}` : c.name]));
  const missing = [...new Set(ids)].filter((id) => !names.has(id));
  if (missing.length) {
    const declared = missing.map((_, i) => `$c${i}: ID!`).join(", ");
    const fields = missing.map((_, i) => `c${i}: channel(id: $c${i}) { id name serverName }`).join(" ");
    const data = await gql(`query(${declared}) { ${fields} }`, Object.fromEntries(missing.map((id, i) => [`c${i}`, id])));
    for (const channel of Object.values(data)) {
      if (channel) names.set(channel.id, channel.serverName ? `${channel.serverName} / ${channel.name}` : channel.name);
    }
  }
  return names;
}

export async function searchPage(view) {
  const query = view.query.get("q") ?? "";
  const kind = view.query.get("kind") ?? "";
  const channel = view.query.get("channel") ?? "";
  const input = h("input", { id: "search-query", type: "search", name: "q", value: query });
  const [kinds, channels] = await Promise.all([
    gql(KINDS).then((data) => data.__type.enumValues.map((value) => value.name)),
    gql(CHANNELS).then((data) => data.channels.nodes),
  ]);
  if (!view.isCurrent()) return;
  const channelInput = h("select", { id: "search-channel", name: "channel" },
    h("option", { value: "" }, "every channel"),
    channels.map((c) => h("option", { value: c.id, selected: c.id === channel }, c.serverName ? `${c.serverName} / ${c.name}` : c.name)));
  const kindInput = h("select", { id: "search-kind", name: "kind" },
    h("option", { value: "" }, "any"),
    kinds.map((name) => h("option", { value: name, selected: name === kind.toUpperCase() }, name.toLowerCase())));
  const form = h("form", {
    class: "search",
    role: "search",
    onsubmit: (event) => {
      event.preventDefault();
      const params = new URLSearchParams();
      if (input.value.trim()) params.set("q", input.value.trim());
      if (kindInput.value.trim()) params.set("kind", kindInput.value.trim());
      if (channelInput.value) params.set("channel", channelInput.value);
      const target = `#/search${params.size ? `?${params}` : ""}`;
      if (location.hash === target) searchPage(view);
      else location.hash = target;
    },
  },
  h("label", { for: "search-query" }, "Words"), input,
  h("label", { for: "search-kind" }, "Kind (optional)"), kindInput,
  h("label", { for: "search-channel" }, "Channel"), channelInput,
  h("button", { type: "submit" }, "Search"));
  const results = h("div", { class: "results" });
  fill(view.main, pageHeading("Knowledge search"), form, results);
  if (!query && !kind && !channel) {
    fill(results, notice("Search the knowledge items of every digest: commands, configs, how-tos and facts."));
    return;
  }
  const wanted = kind.toUpperCase();  // links made before the enum spelled kinds in lowercase
  const filter = { query: query || null, kind: kinds.includes(wanted) ? wanted : null, channelId: channel || null };
  const items = (await gql(SEARCH, { filter })).knowledgeItems.nodes;
  const names = await channelNames(channels, items.map((item) => item.channelId));
  if (!view.isCurrent()) return;
  const source = (item) => h("p", { class: "item-source" }, "From ",
    link(channelHref(item.channelId), names.get(item.channelId) ?? "a deleted channel"),
    " · ", link(digestHref(item.digestId), "in its digest"));
  fill(
    results,
    h("h2", { id: "results-heading" }, plural(items.length, "item")),
    items.length
      ? h("ul", { class: "items", "aria-labelledby": "results-heading" }, items.map((item) => itemEntry(
          [knowledgeContent(item), source(item)],
          item, null, "knowledge-item")))
      : notice(query ? `No knowledge item matches “${query}”.` : "No knowledge item matches."),
  );
}
