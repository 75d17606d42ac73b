// Reports, newest first (title, question, when, sources, audit coverage), and a form that asks
// for a new one: a question, channels and documents chosen from what exists, an optional
// since/until. The form calls triggerReport, follows the job with the job page's code (live.js:
// the jobProgress subscription or polling) and opens the report when the job is done. The API's
// refusals (an empty question, no source, ...) are shown as it words them.

import { gql } from "../graphql.js";
import { fill, h, link, notice, pageHeading, plural, when } from "../dom.js";
import { TERMINAL, watchJob } from "../live.js";
import { jobHref, progressText } from "./jobs.js";
import { reportHref } from "./report.js";

const REPORTS = `query($after: String) { reports(first: 50, after: $after) {
  nodes { id title question createdAt audit { kept proposed coverage sources } }
  pageInfo { hasNextPage endCursor } }
  channels(first: 100) { nodes { id name serverName messageCount } }
  documents(first: 100) { nodes { id title sourceUrl contentType } } }`;
const TRIGGER = `mutation($q: String!, $sources: ReportSources!) { triggerReport(question: $q, sources: $sources) {
  __typename ... on DigestJob { id status }
  ... on InvalidInputError { message reason } ... on NotFoundError { message } } }`;

function coverageText(audit) {
  const share = audit.coverage === null ? "no sentences" : `${Math.round(audit.coverage * 100)}% supported`;
  return `${share} · ${audit.kept} of ${audit.proposed} kept`;
}

function reportTable(reports) {
  return h("table", { class: "listing reports" },
    h("caption", {}, plural(reports.length, "report")),
    h("thead", {}, h("tr", {}, ["Report", "Question", "Made", "Sources", "Audit"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, reports.map((report) => h("tr", { dataset: { report: report.id } },
      h("th", { scope: "row" }, link(reportHref(report.id), report.title)),
      h("td", { class: "report-question" }, report.question),
      h("td", {}, when(report.createdAt)),
      h("td", { class: "number report-sources" }, report.audit.sources),
      h("td", { class: "report-coverage" }, coverageText(report.audit))))));
}

/** A fieldset of checkboxes, one per choice ({id, label}); `none` when there is nothing. */
function choices(legend, name, items, none) {
  return h("fieldset", { class: "choices" }, h("legend", {}, legend),
    items.length
      ? items.map((item, index) => {
          const id = `report-${name}-${index}`;
          return h("span", { class: "choice" },
            h("input", { type: "checkbox", id, name, value: item.id }), h("label", { for: id }, item.label));
        })
      : h("p", { class: "muted" }, none));
}

/** A datetime-local value (the reader's time zone) as an ISO instant, or null when empty. */
function instant(input) {
  if (!input.value) return null;
  const date = new Date(input.value);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

function reportForm(view, channels, documents) {
  const question = h("input", { id: "report-question", name: "question", type: "text", size: 60 });
  const since = h("input", { id: "report-since", name: "since", type: "datetime-local" });
  const until = h("input", { id: "report-until", name: "until", type: "datetime-local" });
  const submit = h("button", { type: "submit" }, "Write the report");
  const status = h("p", { class: "report-job-status muted", role: "status", "aria-live": "polite" });
  const problem = h("div", { class: "report-error" });
  let stopWatching = () => {};
  view.onLeave(() => stopWatching());

  const fail = (message) => {
    fill(problem, notice(message, "error"));
    submit.disabled = false;
  };
  const follow = (job) => {
    fill(status, "Report job ", link(jobHref(job.id), job.id), `: ${progressText(job)}`);
    stopWatching = watchJob(job.id, (state) => {
      fill(status, "Report job ", link(jobHref(job.id), job.id), `: ${progressText(state)}`);
      if (!TERMINAL.has(state.status)) return;
      if (state.status === "SUCCEEDED" && state.reportId) location.hash = reportHref(state.reportId);
      else fail(state.error || state.resultMessage || `The report job ended ${state.status}.`);
    }, (error) => fail(`Could not follow the job: ${error.message}`));
  };

  const form = h("form", {
    class: "report-form",
    novalidate: true, // the API checks the question and says why, in its words
    onsubmit: async (event) => {
      event.preventDefault();
      stopWatching();
      fill(problem);
      fill(status);
      const picked = (name) => [...form.querySelectorAll(`input[name="${name}"]:checked`)].map((box) => box.value);
      const sources = {
        channelIds: picked("channel"), documentIds: picked("document"), since: instant(since), until: instant(until),
      };
      submit.disabled = true;
      try {
        const result = (await gql(TRIGGER, { q: question.value, sources })).triggerReport;
        if (!view.isCurrent()) return;
        if (result.__typename === "DigestJob") follow(result);
        else fail(result.message);
      } catch (error) {
        fail(error.message);
      }
    },
  },
  h("p", {}, h("label", { for: "report-question" }, "Question"), " ", question),
  choices("Channels", "channel", channels.map((c) => ({
    id: c.id, label: `${c.serverName ? `${c.serverName} / ` : ""}${c.name} (${plural(c.messageCount, "message")})`,
  })), "No channels yet."),
  choices("Documents", "document", documents.map((d) => ({
    id: d.id, label: d.title || d.sourceUrl || `untitled ${d.contentType}`,
  })), "No documents yet."),
  h("p", {}, h("label", { for: "report-since" }, "Messages since (optional, your time zone)"), " ", since, " ",
    h("label", { for: "report-until" }, "until (optional)"), " ", until),
  h("p", {}, submit));
  return [form, problem, status];
}

export async function reportsPage(view) {
  const data = await gql(REPORTS, { after: view.query.get("after") });
  if (!view.isCurrent()) return;
  const reports = data.reports.nodes;
  const more = data.reports.pageInfo.hasNextPage
    ? link(`#/reports?after=${encodeURIComponent(data.reports.pageInfo.endCursor)}`, "Next reports")
    : null;
  fill(
    view.main,
    pageHeading("Reports"),
    reports.length ? reportTable(reports) : notice("No reports yet: ask for one below."),
    more,
    h("h2", {}, "Ask for a report"),
    h("p", { class: "muted" }, "Every sentence of a report cites the messages and document spans it rests on."),
    reportForm(view, data.channels.nodes, data.documents.nodes),
  );
}
