// Deleting a channel's data from its page (deleteChannelData, admin tokens only). Asked twice:
// a confirm dialog, then the channel's name typed exactly; only then is the button enabled.
// A running job of the channel makes the API refuse, and the console says so.

import { gql } from "../graphql.js";
import { fill, h, notice } from "../dom.js";

const DELETE_CHANNEL = `mutation($id: ID!) { deleteChannelData(id: $id) { __typename
  ... on DeletedChannel { name messages digests schedules jobs }
  ... on NotFoundError { message } ... on InvalidInputError { message reason } } }`;

export function deleteChannelSection(channel) {
  const area = h("div", { class: "danger-zone" });
  const status = h("div", { class: "delete-status" });
  const start = h("button", {
    type: "button",
    class: "danger",
    onclick: () => {
      const first = `Delete the channel “${channel.name}” and everything it holds: `
        + `${channel.messageCount} messages, its digests, schedules and queued jobs? This cannot be undone.`;
      if (!window.confirm(first)) return;
      fill(area, confirmForm(channel, status));
      area.querySelector("input").focus();
    },
  }, "Delete this channel's data…");
  fill(area, start);
  return [h("h2", {}, "Delete"), area, status];
}

function confirmForm(channel, status) {
  const typed = h("input", { id: "delete-confirm", type: "text", autocomplete: "off", spellcheck: "false",
    "aria-describedby": "delete-confirm-hint" });
  const submit = h("button", { type: "submit", class: "danger", disabled: true }, "Delete for good");
  typed.addEventListener("input", () => { submit.disabled = typed.value !== channel.name; });
  return h("form", {
    class: "inline-form delete-form",
    onsubmit: async (event) => {
      event.preventDefault();
      if (typed.value !== channel.name) return;
      submit.disabled = true;
      fill(status, notice("Deleting…"));
      try {
        const result = (await gql(DELETE_CHANNEL, { id: channel.id })).deleteChannelData;
        if (result.__typename === "DeletedChannel") {
          sessionStorage.setItem("digestd.console.flash",
            `Deleted the channel “${result.name}”: ${result.messages} messages, ${result.digests} digests, `
            + `${result.schedules} schedules, ${result.jobs} jobs.`);
          location.hash = "#/channels";
        } else {
          fill(status, notice(result.message, "error"));
          submit.disabled = false;
        }
      } catch (error) {
        fill(status, notice(error.message, "error"));
        submit.disabled = false;
      }
    },
  },
  h("label", { for: "delete-confirm" }, "Type the channel's name to confirm"), typed,
  h("small", { id: "delete-confirm-hint" }, channel.name),
  submit);
}

/** The message a deletion left for the next page (shown once), or null. */
export function takeFlash() {
  const text = sessionStorage.getItem("digestd.console.flash");
  sessionStorage.removeItem("digestd.console.flash");
  return text ? notice(text) : null;
}
