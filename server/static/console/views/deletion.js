// Deleting from the console (admin tokens only): a channel's data from its page
// (deleteChannelData), a digest from its page (deleteDigest). Asked twice: a confirm dialog, then
// a name typed exactly (the channel's, or the digest's number); only then is the button enabled.
// The API's refusals (a writer token, a running job) are shown as it gives them.

import { gql } from "../graphql.js";
import { fill, h, notice } from "../dom.js";

const DELETE_CHANNEL = `mutation($id: ID!) { deleteChannelData(id: $id) { __typename
  ... on DeletedChannel { name messages digests schedules jobs }
  ... on NotFoundError { message } ... on InvalidInputError { message reason } } }`;
const DELETE_DIGEST = `mutation($id: ID!) { deleteDigest(id: $id) { __typename
  ... on DeletedDigest { channelId uncoveredMessages }
  ... on NotFoundError { message } ... on InvalidInputError { message reason } } }`;

/**
 * A "Delete" section: `question` in a confirm dialog, then `expected` typed exactly; then
 * `remove()` runs the mutation and returns [the page to go to, what to say there] or the API's
 * refusal as a string.
 */
function dangerZone({ button, question, expected, what, remove }) {
  const area = h("div", { class: "danger-zone" });
  const status = h("div", { class: "delete-status" });
  const start = h("button", {
    type: "button",
    class: "danger",
    onclick: () => {
      if (!window.confirm(question)) return;
      fill(area, confirmForm({ expected, what, remove, status }));
      area.querySelector("input").focus();
    },
  }, button);
  fill(area, start);
  return [h("h2", {}, "Delete"), area, status];
}

function confirmForm({ expected, what, remove, status }) {
  const typed = h("input", { id: "delete-confirm", type: "text", autocomplete: "off", spellcheck: "false",
    "aria-describedby": "delete-confirm-hint" });
  const submit = h("button", { type: "submit", class: "danger", disabled: true }, "Delete for good");
  typed.addEventListener("input", () => { submit.disabled = typed.value !== expected; });
  return h("form", {
    class: "inline-form delete-form",
    onsubmit: async (event) => {
      event.preventDefault();
      if (typed.value !== expected) return;
      submit.disabled = true;
      fill(status, notice("Deleting…"));
      try {
        const outcome = await remove();
        if (Array.isArray(outcome)) {
          const [next, flash] = outcome;
          sessionStorage.setItem("digestd.console.flash", flash);
          location.hash = next;
        } else {
          fill(status, notice(outcome, "error"));
          submit.disabled = false;
        }
      } catch (error) {
        fill(status, notice(error.message, "error"));
        submit.disabled = false;
      }
    },
  },
  h("label", { for: "delete-confirm" }, `Type ${what} to confirm`), typed,
  h("small", { id: "delete-confirm-hint" }, expected),
  submit);
}

export function deleteChannelSection(channel) {
  return dangerZone({
    button: "Delete this channel's data…",
    question: `Delete the channel “${channel.name}” and everything it holds: `
      + `${channel.messageCount} messages, its digests, schedules and queued jobs? This cannot be undone.`,
    expected: channel.name,
    what: "the channel's name",
    remove: async () => {
      const result = (await gql(DELETE_CHANNEL, { id: channel.id })).deleteChannelData;
      if (result.__typename !== "DeletedChannel") return result.message;
      return ["#/channels", `Deleted the channel “${result.name}”: ${result.messages} messages, `
        + `${result.digests} digests, ${result.schedules} schedules, ${result.jobs} jobs.`];
    },
  });
}

/** `number`: the digest's number as the page shows it (its row id). */
export function deleteDigestSection(digest, number) {
  return dangerZone({
    button: "Delete this digest…",
    question: `Delete the digest “${digest.title}”? Its ${digest.messageCount} messages stay and `
      + "the channel's next digest reads them again. This cannot be undone.",
    expected: number,
    what: "the digest's number",
    remove: async () => {
      const result = (await gql(DELETE_DIGEST, { id: digest.id })).deleteDigest;
      if (result.__typename !== "DeletedDigest") return result.message;
      return [`#/channel/${encodeURIComponent(result.channelId)}`,
        `Deleted digest ${number}: its ${result.uncoveredMessages} messages will be read by the next digest.`];
    },
  });
}

/** The message a deletion left for the next page (shown once), or null. */
export function takeFlash() {
  const text = sessionStorage.getItem("digestd.console.flash");
  sessionStorage.removeItem("digestd.console.flash");
  return text ? notice(text) : null;
}
