// A channel's entities (#/entities?channel=ID&q=postgres): the tools, services, files and people
// it talks about, the most mentioned first, with their spellings and versions, and the weekly
// trend of the most mentioned of them as a chart. Without a channel, a list of channels.

import { gql } from "../graphql.js";
import { fill, h, link, notice, pageHeading, when } from "../dom.js";
import { weeklyTrendChart } from "../charts.js";
import { channelHref } from "./channels.js";
import { TREND_LINES, entitiesHref } from "./channel_charts.js";
import { channelChoice } from "./conversations.js";

const PAGE_SIZE = 50;
const ENTITIES = `query($id: ID!, $filter: EntityFilter, $after: String) {
  channel(id: $id) { id name }
  entities(filter: $filter, first: ${PAGE_SIZE}, after: $after) {
    nodes { id name kind aliases versions mentionCount firstSeen lastSeen digestCount }
    totalCount pageInfo { hasNextPage endCursor } } }`;
// Trends of the most mentioned: asked for separately, for the first few only.
const TRENDS = `query($filter: EntityFilter) { entities(filter: $filter, first: ${TREND_LINES}) {
  nodes { id name trend { week mentions } } } }`;

function entitiesWord(count) {
  return `${count} ${count === 1 ? "entity" : "entities"}`;
}

function entityRow(entity) {
  return h("tr", { dataset: { entity: entity.id } },
    h("th", { scope: "row", class: "entity-name" }, entity.name),
    h("td", {}, entity.kind.toLowerCase()),
    h("td", { class: "number mention-count" }, entity.mentionCount),
    h("td", { class: "number" }, entity.digestCount),
    h("td", {}, entity.aliases.filter((a) => a !== entity.name).join(", ") || "—"),
    h("td", {}, entity.versions.join(", ") || "—"),
    h("td", {}, when(entity.firstSeen)),
    h("td", {}, when(entity.lastSeen)));
}

export async function entitiesPage(view) {
  const channelId = view.query.get("channel");
  if (!channelId) {
    await channelChoice(view, "Entities", entitiesHref);
    return;
  }
  const query = view.query.get("q") ?? "";
  const filter = { channelId, query: query || null };
  const [data, trends] = await Promise.all([
    gql(ENTITIES, { id: channelId, filter, after: view.query.get("after") }),
    gql(TRENDS, { filter }),
  ]);
  if (!view.isCurrent()) return;
  if (!data.channel) {
    fill(view.main, pageHeading("Channel not found"), notice(`No channel ${channelId}.`, "error"));
    return;
  }
  const page = data.entities;
  const here = (extra) => `${entitiesHref(channelId)}${query ? `&q=${encodeURIComponent(query)}` : ""}${extra}`;
  const input = h("input", { id: "entity-query", type: "search", name: "q", value: query });
  const form = h("form", {
    class: "search",
    role: "search",
    onsubmit: (event) => {
      event.preventDefault();
      const wanted = input.value.trim();
      location.hash = `${entitiesHref(channelId)}${wanted ? `&q=${encodeURIComponent(wanted)}` : ""}`;
    },
  }, h("label", { for: "entity-query" }, "Name, any spelling"), input, h("button", { type: "submit" }, "Find"));
  fill(view.main,
    h("p", { class: "crumbs" }, link(channelHref(data.channel.id), `Channel ${data.channel.name}`)),
    pageHeading(`Entities of ${data.channel.name}`),
    form,
    weeklyTrendChart({
      name: "entities",
      title: `The most mentioned ${trends.entities.nodes.length === 1 ? "entity" : "entities"}: messages per ISO week`,
      trends: trends.entities.nodes.map((e) => ({ label: e.name, trend: e.trend })),
    }),
    page.nodes.length
      ? h("div", { class: "table-scroll", role: "region", tabindex: "0", "aria-labelledby": "entities-caption" },
          h("table", { class: "listing entities" },
            h("caption", { id: "entities-caption" }, `${entitiesWord(page.totalCount)}${query ? ` matching “${query}”` : ""}, the most mentioned first`),
            h("thead", {}, h("tr", {},
              ["Entity", "Kind", "Messages", "Digests", "Other spellings", "Versions", "First seen", "Last seen"].map((t) => h("th", { scope: "col" }, t)))),
            h("tbody", {}, page.nodes.map(entityRow))))
      : notice(query ? `No entity matches “${query}”.` : "No entities yet: a digest finds them when it reads the messages."),
    page.pageInfo.hasNextPage ? link(here(`&after=${encodeURIComponent(page.pageInfo.endCursor)}`), "More entities") : null);
}
