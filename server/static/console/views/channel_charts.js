// A channel's pictures: its activity per day (messages, conversations, the digests that read
// them), the trends of its most mentioned recurring topics and entities per ISO week, and links
// to its conversations and entities. One request; the channel page adds it as one section.

import { gql } from "../graphql.js";
import { h, link } from "../dom.js";
import { daySeconds, timeChart, weeklyTrendChart } from "../charts.js";

export const ACTIVITY_DAYS = 30;
// How many topics and entities a trend chart draws: more lines than this are unreadable.
export const TREND_LINES = 5;
// Topics come newest first; the chart draws the most mentioned of the newest ones.
const TOPICS_READ = 20;

const CHARTS = `query($id: ID!, $days: Int!) {
  channel(id: $id) { id activity(days: $days) { day messageCount conversationCount digestCount } }
  topics(filter: {channelId: $id}, first: ${TOPICS_READ}) { nodes { id title mentionCount trend { week mentions } } }
  entities(filter: {channelId: $id}, first: ${TREND_LINES}) { nodes { id name mentionCount trend { week mentions } } }
}`;

export function conversationsHref(channelId) {
  return `#/conversations?channel=${encodeURIComponent(channelId)}`;
}

export function entitiesHref(channelId) {
  return `#/entities?channel=${encodeURIComponent(channelId)}`;
}

/** The topics a chart draws: the most mentioned, ties by title, at most TREND_LINES. */
export function topTopics(topics) {
  return [...topics]
    .sort((a, b) => b.mentionCount - a.mentionCount || a.title.localeCompare(b.title))
    .slice(0, TREND_LINES);
}

/** The activity chart of `days` ({day, messageCount, conversationCount, digestCount}). */
export function activityChart(days) {
  return timeChart({
    name: "activity",
    title: `Activity per day (UTC), the last ${days.length} days with messages at the end`,
    x: days.map((d) => daySeconds(d.day)),
    series: [
      { label: "Messages", values: days.map((d) => d.messageCount) },
      { label: "Conversations", values: days.map((d) => d.conversationCount) },
      { label: "Digests reading them", values: days.map((d) => d.digestCount) },
    ],
    bars: true,
  });
}

export async function channelChartsSection(channelId) {
  const data = await gql(CHARTS, { id: channelId, days: ACTIVITY_DAYS });
  const topics = topTopics(data.topics.nodes);
  const entities = data.entities.nodes;
  return h("section", { class: "channel-charts", "aria-labelledby": "channel-charts-heading" },
    h("h2", { id: "channel-charts-heading" }, "Activity and trends"),
    h("p", {}, link(conversationsHref(channelId), "Conversations"), " · ", link(entitiesHref(channelId), "Entities")),
    activityChart(data.channel?.activity ?? []),
    weeklyTrendChart({
      name: "topics",
      title: "Recurring topics: messages per ISO week",
      trends: topics.map((t) => ({ label: t.title, trend: t.trend })),
    }),
    weeklyTrendChart({
      name: "entities",
      title: "Most mentioned entities: messages per ISO week",
      trends: entities.map((e) => ({ label: e.name, trend: e.trend })),
    }));
}
