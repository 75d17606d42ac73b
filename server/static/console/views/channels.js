// Channels with their message counts and last digest; one channel with its activity and trends
// as charts (views/channel_charts.js), its current state
// (open questions, action items, decisions in force: views/items.js), its digests, its digest
// schedules (managed in views/schedules.js), a button that queues a digest of its new messages
// (then shows the job, live), and the deletion of its data (views/deletion.js).

import { gql } from "../graphql.js";
import { fill, h, link, notice, pageHeading, plural, when } from "../dom.js";
import { channelStateSection } from "./items.js";
import { channelChartsSection } from "./channel_charts.js";
import { SCHEDULE_FIELDS, scheduleSection } from "./schedules.js";
import { deleteChannelSection, takeFlash } from "./deletion.js";

const CHANNELS = `query($after: String) { channels(first: 100, after: $after) {
  nodes { id name serverName messageCount uncoveredMessageCount }
  pageInfo { hasNextPage endCursor } } }`;
const DIGEST_SUMMARY = "id title createdAt messageCount signalQuality { level }";

export function digestHref(id) {
  return `#/digest/${encodeURIComponent(id)}`;
}

export function channelHref(id) {
  return `#/channel/${encodeURIComponent(id)}`;
}

/** The newest digest of each channel, in one request (one aliased field per channel). */
async function lastDigests(channels) {
  if (!channels.length) return {};
  const variables = {};
  const fields = channels.map((channel, index) => {
    variables[`c${index}`] = channel.id;
    return `d${index}: digests(filter: {channelId: $c${index}}, first: 1) { nodes { ${DIGEST_SUMMARY} } }`;
  });
  const declared = channels.map((_, index) => `$c${index}: ID!`).join(", ");
  const data = await gql(`query(${declared}) { ${fields.join(" ")} }`, variables);
  return Object.fromEntries(channels.map((channel, index) => [channel.id, data[`d${index}`].nodes[0] ?? null]));
}

export async function channelsPage(view) {
  const data = await gql(CHANNELS, { after: view.query.get("after") });
  const channels = data.channels.nodes;
  const latest = await lastDigests(channels);
  if (!view.isCurrent()) return;
  const rows = channels.map((channel) => {
    const digest = latest[channel.id];
    return h(
      "tr",
      { dataset: { channel: channel.id } },
      h("th", { scope: "row" }, link(channelHref(channel.id), channel.name)),
      h("td", {}, channel.serverName ?? "—"),
      h("td", { class: "number message-count" }, channel.messageCount),
      h("td", { class: "number" }, channel.uncoveredMessageCount),
      h("td", { class: "last-digest" },
        digest ? [link(digestHref(digest.id), digest.title), h("br"), h("small", {}, when(digest.createdAt))] : "none yet"),
    );
  });
  const more = data.channels.pageInfo.hasNextPage
    ? link(`#/channels?after=${encodeURIComponent(data.channels.pageInfo.endCursor)}`, "Next channels")
    : null;
  fill(
    view.main,
    pageHeading("Channels"),
    takeFlash(),
    channels.length
      ? h("table", { class: "listing" },
          h("caption", {}, plural(channels.length, "channel")),
          h("thead", {}, h("tr", {},
            ["Channel", "Server", "Messages", "Not yet digested", "Last digest"].map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", {}, rows))
      : notice("No channels yet: import a chat export (Add data) or ingest messages first."),
    more,
  );
}

export async function channelPage(view) {
  const data = await gql(
    `query($id: ID!) { channel(id: $id) { id name serverName messageCount uncoveredMessageCount createdAt }
       digests(filter: {channelId: $id}, first: 50) { nodes { ${DIGEST_SUMMARY} excerpt } }
       schedules(filter: {channelId: $id}, first: 20) { nodes { ${SCHEDULE_FIELDS} } } }`,
    { id: view.id },
  );
  if (!view.isCurrent()) return;
  const channel = data.channel;
  if (!channel) {
    fill(view.main, pageHeading("Channel not found"), notice(`No channel ${view.id}.`, "error"));
    return;
  }
  const [state, charts] = await Promise.all([channelStateSection(channel.id), channelChartsSection(channel.id)]);
  if (!view.isCurrent()) return;
  const status = h("p", { role: "status", class: "muted" });
  const trigger = h("button", {
    type: "button",
    onclick: async () => {
      trigger.disabled = true;
      status.textContent = "Queuing a digest…";
      try {
        const result = (await gql(
          `mutation($id: ID!) { triggerDigest(channelId: $id) { __typename
             ... on DigestJob { id } ... on NotFoundError { message } ... on InvalidInputError { message } } }`,
          { id: channel.id },
        )).triggerDigest;
        if (result.__typename === "DigestJob") location.hash = `#/job/${encodeURIComponent(result.id)}`;
        else status.textContent = result.message;
      } catch (error) {
        status.textContent = error.message;
      } finally {
        trigger.disabled = false;
      }
    },
  }, "Digest new messages");
  fill(
    view.main,
    pageHeading(`Channel ${channel.name}`),
    takeFlash(),
    h("dl", { class: "facts" },
      h("dt", {}, "Server"), h("dd", {}, channel.serverName ?? "—"),
      h("dt", {}, "Messages"), h("dd", { class: "message-count" }, channel.messageCount),
      h("dt", {}, "Not yet digested"), h("dd", {}, channel.uncoveredMessageCount)),
    h("p", {}, trigger, " ", link(`#/jobs?channel=${encodeURIComponent(channel.id)}`, "Jobs of this channel")),
    status,
    charts,
    state,
    h("h2", {}, "Digests"),
    data.digests.nodes.length
      ? h("ul", { class: "cards" }, data.digests.nodes.map((digest) => h("li", {},
          link(digestHref(digest.id), digest.title),
          h("small", {}, ` ${when(digest.createdAt)} · ${plural(digest.messageCount, "message")} · signal ${digest.signalQuality.level}`),
          h("p", { class: "excerpt" }, digest.excerpt))))
      : notice("No digest of this channel yet."),
    scheduleSection(channel.id, data.schedules.nodes),
    deleteChannelSection(channel),
  );
}
