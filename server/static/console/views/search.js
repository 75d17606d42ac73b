// Knowledge-item search: full-text (websearch syntax) over titles and texts, across digests.
// The query lives in the URL (#/search?q=...), so a search can be linked and reloaded.

import { gql } from "../graphql.js";
import { fill, h, link, notice, pageHeading, plural } from "../dom.js";
import { digestHref } from "./channels.js";
import { POINTER, itemEntry, knowledgeContent } from "./digest.js";

const SEARCH = `query($filter: KnowledgeItemFilter) { knowledgeItems(filter: $filter, first: 50) {
  nodes { id digestId channelId key kind title verbatim content text messageIds createdAt
    ${POINTER} flags { code message } } } }`;

// The kinds are the API's enum (UPPER_CASE), asked of the schema so the choice never drifts.
const KINDS = `{ __type(name: "KnowledgeItemKind") { enumValues { name } } }`;

export async function searchPage(view) {
  const query = view.query.get("q") ?? "";
  const kind = view.query.get("kind") ?? "";
  const input = h("input", { id: "search-query", type: "search", name: "q", value: query });
  const kinds = (await gql(KINDS)).__type.enumValues.map((value) => value.name);
  if (!view.isCurrent()) return;
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
      const target = `#/search${params.size ? `?${params}` : ""}`;
      if (location.hash === target) searchPage(view);
      else location.hash = target;
    },
  },
  h("label", { for: "search-query" }, "Words"), input,
  h("label", { for: "search-kind" }, "Kind (optional)"), kindInput,
  h("button", { type: "submit" }, "Search"));
  const results = h("div", { class: "results" });
  fill(view.main, pageHeading("Knowledge search"), form, results);
  if (!query && !kind) {
    fill(results, notice("Search the knowledge items of every digest: commands, configs, how-tos and facts."));
    return;
  }
  const wanted = kind.toUpperCase();  // links made before the enum spelled kinds in lowercase
  const filter = { query: query || null, kind: kinds.includes(wanted) ? wanted : null };
  const items = (await gql(SEARCH, { filter })).knowledgeItems.nodes;
  if (!view.isCurrent()) return;
  fill(
    results,
    h("h2", { id: "results-heading" }, plural(items.length, "item")),
    items.length
      ? h("ul", { class: "items", "aria-labelledby": "results-heading" }, items.map((item) => itemEntry(
          [knowledgeContent(item), h("p", {}, link(digestHref(item.digestId), "In its digest"))],
          item, null, "knowledge-item")))
      : notice(`No knowledge item matches “${query}”.`),
  );
}
