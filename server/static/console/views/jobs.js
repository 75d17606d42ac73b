// Jobs, newest first, and one job with live progress: the status line is an aria-live region
// updated from the jobProgress subscription, or from polling where the API has none.

import { gql } from "../graphql.js";
import { fill, h, link, notice, pageHeading, rowNumber, when } from "../dom.js";
import { TERMINAL, fetchJob, watchJob } from "../live.js";
import { channelHref, digestHref } from "./channels.js";

const JOBS = `query($filter: DigestJobFilter) { digestJobs(filter: $filter, first: 50) {
  nodes { id kind status phase progress { chunksDone chunksTotal fraction etaSeconds } createdAt finishedAt
    durationSeconds channel { id name } query }
  pageInfo { hasNextPage endCursor } } }`;
// While a listed job has not ended, the list is read again this often (and stops once every
// listed job has ended or the reader left the page).
const LIST_REFRESH_MS = 2000;

export function jobHref(id) {
  return `#/job/${encodeURIComponent(id)}`;
}

export async function jobsPage(view) {
  const channelId = view.query.get("channel");
  const data = await gql(JOBS, { filter: channelId ? { channelId } : null });
  if (!view.isCurrent()) return;
  const jobs = data.digestJobs.nodes;
  const body = h("tbody", {}, jobs.map(jobRow));
  fill(
    view.main,
    pageHeading(channelId ? "Jobs of one channel" : "Jobs"),
    jobs.length
      ? h("div", { class: "table-scroll" }, h("table", { class: "listing jobs" },
          h("thead", {}, h("tr", {}, ["Job", "Kind", "Status", "Progress", "Created", "Took"].map((t) => h("th", { scope: "col" }, t)))),
          body))
      : notice("No jobs yet."),
  );
  // Live: the rows follow their jobs until every listed job has ended.
  let listed = jobs;
  while (listed.some((job) => !TERMINAL.has(job.status))) {
    await new Promise((resolve) => setTimeout(resolve, LIST_REFRESH_MS));
    if (!view.isCurrent()) return;
    listed = (await gql(JOBS, { filter: channelId ? { channelId } : null })).digestJobs.nodes;
    if (!view.isCurrent()) return;
    body.replaceChildren(...listed.map(jobRow));
  }
}

const KINDS = { channel: "channel digest", document: "document digest", report: "report" };

function jobRow(job) {
  return h("tr", { dataset: { status: job.status } },
    h("th", { scope: "row" }, link(jobHref(job.id), jobTitle(job, job.channel?.name))),
    h("td", {}, KINDS[job.kind] ?? job.kind),
    h("td", { class: `status ${job.status.toLowerCase()}` }, job.status),
    h("td", { class: "progress-text" }, progressText(job)),
    h("td", {}, when(job.createdAt)),
    h("td", { class: "took" }, job.durationSeconds == null ? "—" : duration(job.durationSeconds)));
}

/**
 * "RUNNING · MAP · 42% · 3 of 8 chunks · about 2 min left", "SUCCEEDED · 8 of 8 chunks": what
 * the live region says. The percentage is the whole job's (never going back), not the map's.
 */
export function progressText(job) {
  const parts = [job.status];
  const running = !TERMINAL.has(job.status);
  if (job.phase && running && job.phase !== job.status) parts.push(job.phase);
  const progress = job.progress;
  if (progress && running && job.status !== "QUEUED") parts.push(`${Math.floor((progress.fraction ?? 0) * 100)}%`);
  if (progress && progress.chunksTotal > 0) parts.push(`${progress.chunksDone} of ${progress.chunksTotal} chunks`);
  if (progress && running && progress.etaSeconds != null) parts.push(`about ${duration(progress.etaSeconds)} left`);
  return parts.join(" · ");
}

function duration(seconds) {
  if (seconds < 90) return `${Math.max(1, Math.round(seconds))} s`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

/** "team-platform digest · job 12", "Document digest · job 13", "Report · job 14". */
function jobTitle(job, channelName) {
  const what = job.kind === "report" ? "Report"
    : job.kind === "document" ? "Document digest"
    : channelName ? `${channelName} digest` : "Channel digest";
  const number = rowNumber(job.id);
  return number ? `${what} · job ${number}` : what;
}

function outcome(job) {
  if (!TERMINAL.has(job.status)) return [];
  const lines = [];
  if (job.error) lines.push(h("p", { class: "notice error" }, job.error));
  if (job.resultMessage) lines.push(h("p", {}, job.resultMessage));
  if (job.digestId) lines.push(h("p", {}, link(digestHref(job.digestId), "Open the digest")));
  if (job.reportId) lines.push(h("p", {}, link(`#/reports/${encodeURIComponent(job.reportId)}`, "Open the report")));
  if (job.documentId) lines.push(h("p", {}, link(`#/document/${encodeURIComponent(job.documentId)}`, "Open the document")));
  return lines;
}

export async function jobPage(view) {
  const [first, named] = await Promise.all([
    fetchJob(view.id),
    gql(`query($id: ID!) { job(id: $id) { channel { name } } }`, { id: view.id }),
  ]);
  if (!view.isCurrent()) return;
  if (!first) {
    fill(view.main, pageHeading("Job not found"), notice(`No job ${view.id}.`, "error"));
    return;
  }
  const status = h("p", { class: "job-status", role: "status", "aria-live": "polite", "aria-atomic": "true" });
  const bar = h("progress", { max: 1, value: 0, "aria-label": "Share of the job done" });
  const via = h("p", { class: "muted via" });
  const details = h("dl", { class: "facts" });
  const end = h("div", { class: "outcome" });
  const cancel = h("button", {
    type: "button",
    onclick: async () => {
      cancel.disabled = true;
      try {
        await gql(`mutation($id: ID!) { cancelJob(id: $id) { __typename } }`, { id: first.id });
      } catch (error) {
        via.textContent = error.message;
      }
    },
  }, "Cancel job");
  const show = (job, how) => {
    status.textContent = progressText(job);
    status.className = `job-status ${job.status.toLowerCase()}`;
    bar.value = job.progress?.fraction ?? 0;
    if (how) via.textContent = how === "subscription" ? "Live: subscribed to progress." : "Live: checking every second.";
    fill(details,
      h("dt", {}, "Kind"), h("dd", {}, job.kind ?? first.kind),
      h("dt", {}, "Attempts"), h("dd", {}, `${job.attempts ?? first.attempts} of ${job.maxAttempts ?? first.maxAttempts}`),
      h("dt", {}, "Created"), h("dd", {}, when(job.createdAt ?? first.createdAt)),
      h("dt", {}, "Started"), h("dd", {}, when(job.startedAt)),
      h("dt", {}, "Finished"), h("dd", {}, when(job.finishedAt)));
    fill(end, ...outcome(job));
    cancel.hidden = TERMINAL.has(job.status);
  };
  fill(
    view.main,
    first.channelId ? h("p", { class: "crumbs" }, link(channelHref(first.channelId), "Its channel")) : null,
    pageHeading(jobTitle(first, named.job?.channel?.name)),
    status, bar, via, cancel, details, end,
  );
  show(first, null);
  if (TERMINAL.has(first.status)) {
    via.textContent = "Finished.";
    return;
  }
  const stop = watchJob(first.id, (job, how) => {
    show(job, how);
    if (TERMINAL.has(job.status)) via.textContent = `Finished (followed by ${how}).`;
  }, (error) => {
    via.textContent = `Could not update: ${error.message}`;
  });
  view.onLeave(stop);
}
