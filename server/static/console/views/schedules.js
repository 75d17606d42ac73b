// A channel's digest schedules on its page: the list (cron and zone, next and last run, the
// last job a firing queued) with pause, resume and delete per schedule, and a form to add one.
// Every change goes through the API's schedule mutations; the section then reads the list again.

import { gql } from "../graphql.js";
import { fill, h, link, notice, plural, when } from "../dom.js";

export const SCHEDULE_FIELDS = "id cron timezone paused nextRunAt lastRunAt lastJob { id status resultMessage }";
const LIST = `query($id: ID!) { schedules(filter: {channelId: $id}, first: 20) { nodes { ${SCHEDULE_FIELDS} } } }`;
const CREATE = `mutation($id: ID!, $cron: String!, $tz: String!) {
  createSchedule(channelId: $id, cron: $cron, timezone: $tz) { __typename
    ... on Schedule { id } ... on NotFoundError { message } ... on InvalidInputError { message } } }`;
const CHANGES = {
  pause: `mutation($id: ID!) { result: pauseSchedule(id: $id) { __typename
    ... on NotFoundError { message } ... on InvalidInputError { message } } }`,
  resume: `mutation($id: ID!) { result: resumeSchedule(id: $id) { __typename
    ... on NotFoundError { message } ... on InvalidInputError { message } } }`,
  delete: `mutation($id: ID!) { result: deleteSchedule(id: $id) { __typename
    ... on NotFoundError { message } ... on InvalidInputError { message } } }`,
};

/** The section: a heading, the table (or a notice), the add form, and a status line. */
export function scheduleSection(channelId, schedules) {
  const body = h("div", { class: "schedules" });
  const status = h("p", { role: "status", class: "muted schedule-status" });
  const reload = async () => {
    const data = await gql(LIST, { id: channelId });
    fill(body, scheduleTable(data.schedules.nodes, change));
  };
  const change = async (kind, schedule) => {
    if (kind === "delete" && !window.confirm(`Delete the schedule “${schedule.cron}” (${schedule.timezone})? The jobs it queued stay.`)) return;
    status.textContent = "";
    try {
      const result = (await gql(CHANGES[kind], { id: schedule.id })).result;
      if (result.message) status.textContent = result.message;
      await reload();
    } catch (error) {
      status.textContent = error.message;
    }
  };
  fill(body, scheduleTable(schedules, change));
  return [h("h2", {}, "Schedules"), body, addForm(channelId, status, reload), status];
}

function scheduleTable(schedules, change) {
  if (!schedules.length) return notice("No schedule yet: add one below.");
  const lastJob = (job) => job
    ? link(`#/job/${encodeURIComponent(job.id)}`, job.resultMessage ? `${job.status} · ${job.resultMessage}` : job.status)
    : "—";
  const actions = (schedule) => [
    schedule.paused
      ? h("button", { type: "button", class: "schedule-resume", onclick: () => change("resume", schedule) }, "Resume")
      : h("button", { type: "button", class: "schedule-pause", onclick: () => change("pause", schedule) }, "Pause"),
    " ",
    h("button", { type: "button", class: "schedule-delete", onclick: () => change("delete", schedule) }, "Delete"),
  ];
  return h("table", {},
    h("caption", {}, plural(schedules.length, "schedule")),
    h("thead", {}, h("tr", {},
      ["Cron", "Time zone", "Next run", "Last run", "Last job", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, schedules.map((schedule) => h("tr", { dataset: { schedule: schedule.id } },
      h("th", { scope: "row" }, h("code", {}, schedule.cron)),
      h("td", {}, schedule.timezone),
      h("td", { class: "schedule-next" }, schedule.paused ? "paused" : when(schedule.nextRunAt)),
      h("td", {}, when(schedule.lastRunAt)),
      h("td", { class: "schedule-job" }, lastJob(schedule.lastJob)),
      h("td", { class: "schedule-actions" }, actions(schedule))))));
}

function addForm(channelId, status, reload) {
  const cron = h("input", { id: "schedule-cron", type: "text", name: "cron", required: true,
    placeholder: "0 9 * * 1-5", autocomplete: "off", "aria-describedby": "schedule-cron-hint" });
  const zone = h("input", { id: "schedule-timezone", type: "text", name: "timezone", required: true,
    value: Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC", autocomplete: "off" });
  return h("form", {
    class: "inline-form schedule-form",
    onsubmit: async (event) => {
      event.preventDefault();
      status.textContent = "";
      try {
        const result = (await gql(CREATE, { id: channelId, cron: cron.value.trim(), tz: zone.value.trim() })).createSchedule;
        if (result.__typename === "Schedule") {
          cron.value = "";
          status.textContent = "Schedule added.";
          await reload();
        } else {
          status.textContent = result.message;
        }
      } catch (error) {
        status.textContent = error.message;
      }
    },
  },
  h("label", { for: "schedule-cron" }, "Cron"), cron,
  h("small", { id: "schedule-cron-hint" }, "minute hour day month weekday"),
  h("label", { for: "schedule-timezone" }, "Time zone"), zone,
  h("button", { type: "submit" }, "Add schedule"));
}
