// Adding data from the console (#/upload): a chat export file or a Slack export's zip
// (importChatExport: the server runs the same importers as `digestd import`, and says what it
// rejected, where and why), then a digest of the channels it filled; or a document
// (ingestDocument: HTML, PDF or text).
// Files are read in the browser and sent as base64: the server sees exactly the file's bytes.

import { gql } from "../graphql.js";
import { fill, h, link, notice, pageHeading, plural } from "../dom.js";
import { channelHref } from "./channels.js";
import { documentHref } from "./documents.js";
import { jobHref } from "./jobs.js";

const MB = 1024 * 1024;
const MAX_EXPORT_BYTES = 20 * MB;  // the API's cap (schema/resolvers/imports.py)
const MAX_DOCUMENT_BYTES = 10 * MB;  // the API's cap (schema/resolvers/documents.py)
const FORMATS = [
  ["", "detect from the content"],
  ["jsonl", "JSONL"],
  ["discord_json", "Discord JSON (DiscordChatExporter)"],
  ["discord_csv", "Discord CSV"],
  ["discord_txt", "Discord TXT"],
  ["slack", "Slack export (zip)"],
  ["irc", "IRC log"],
  ["qmsum", "QMSum meeting"],
];
const IMPORT = `mutation($input: ChatExportInput!) { importChatExport(input: $input) { __typename
  ... on ChatImport { format accepted rejected repaired inserted updated unchanged message stopped
    channels { id name messageCount uncoveredMessageCount } skipped { reason count }
    errors { location reason } repairs }
  ... on InvalidInputError { message } } }`;
const INGEST_DOCUMENT = `mutation($input: DocumentInput!) { ingestDocument(input: $input) { __typename
  ... on Document { id title contentType chars } ... on InvalidInputError { message } } }`;
const TRIGGER = `mutation($id: ID!) { triggerDigest(channelId: $id) { __typename
  ... on DigestJob { id } ... on NotFoundError { message } ... on InvalidInputError { message } } }`;

/** The file's bytes as base64 (without the data: prefix FileReader puts before them). */
function base64Of(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ""));
    reader.onerror = () => reject(reader.error || new Error("the file could not be read"));
    reader.readAsDataURL(file);
  });
}

/** "team-chat.2025.jsonl" -> "team-chat.2025": the channel name the form suggests. */
function stem(name) {
  const dot = name.lastIndexOf(".");
  return (dot > 0 ? name.slice(0, dot) : name).trim();
}

function field(id, label, control, hint = null) {
  return h("p", { class: "field" }, h("label", { for: id }, label), " ", control,
    hint ? h("small", { id: `${id}-hint` }, ` ${hint}`) : null);
}

function chatExportForm() {
  const file = h("input", { id: "export-file", type: "file", name: "file", required: true,
    "aria-describedby": "export-file-hint" });
  const channel = h("input", { id: "export-channel", type: "text", name: "channel", autocomplete: "off",
    "aria-describedby": "export-channel-hint" });
  const format = h("select", { id: "export-format", name: "format" },
    FORMATS.map(([value, label]) => h("option", { value }, label)));
  const baseDate = h("input", { id: "export-base-date", type: "date", name: "baseDate",
    "aria-describedby": "export-base-date-hint" });
  const submit = h("button", { type: "submit" }, "Import");
  const status = h("div", { class: "upload-status" });
  // A log names no channel: its file's name is the suggestion. A Slack zip names its own
  // channels, and a name given would put them all into one.
  file.addEventListener("change", () => {
    const chosen = file.files[0];
    if (chosen && !channel.value.trim() && !/\.zip$/i.test(chosen.name)) channel.value = stem(chosen.name);
  });
  const form = h("form", {
    class: "upload-form",
    "aria-labelledby": "export-heading",
    onsubmit: async (event) => {
      event.preventDefault();
      const chosen = file.files[0];
      if (!chosen) return;
      if (chosen.size > MAX_EXPORT_BYTES) {
        fill(status, notice(`${chosen.name} is over ${MAX_EXPORT_BYTES / MB} MB: import it with \`digestd import\` instead.`, "error"));
        return;
      }
      submit.disabled = true;
      fill(status, notice(`Importing ${chosen.name}…`));
      try {
        const input = {
          contentBase64: await base64Of(chosen),
          fileName: chosen.name,
          channelName: channel.value.trim() || null,
          format: format.value || null,
          baseDate: baseDate.value || null,
        };
        const result = (await gql(IMPORT, { input })).importChatExport;
        if (result.__typename === "ChatImport") fill(status, importReport(result));
        else fill(status, notice(result.message, "error"));
      } catch (error) {
        fill(status, notice(error.message, "error"));
      } finally {
        submit.disabled = false;
      }
    },
  },
  field("export-file", "Export file", file, "JSONL, DiscordChatExporter JSON/CSV/TXT, an IRC log or a Slack export's zip (at most 20 MB)."),
  field("export-channel", "Channel name", channel, "Empty: the export's own channel names."),
  field("export-format", "Format", format),
  field("export-base-date", "Day of the log", baseDate,
    "For a log whose lines carry only times and whose file name names no date (an IRC log): else 1970-01-01 is assumed."),
  h("p", {}, submit));
  return [h("h2", { id: "export-heading" }, "Import a chat export"), form, status];
}

/** What an import stored and rejected, with a button per channel to digest it now. */
function importReport(result) {
  const ok = result.accepted > 0 && !result.stopped;
  return h("div", { class: "import-report" },
    notice(result.message, ok ? "info" : "error"),
    result.errors.length
      ? h("details", { open: true }, h("summary", {}, `Rejected records (first ${plural(result.errors.length, "record")})`),
          h("ul", { class: "rejected" }, result.errors.map((e) => h("li", {}, h("strong", {}, e.location), `: ${e.reason}`))))
      : null,
    result.repairs.length
      ? h("details", {}, h("summary", {}, `Repaired records (first ${plural(result.repairs.length, "record")})`),
          h("ul", { class: "repaired" }, result.repairs.map((repair) => h("li", {}, repair))))
      : null,
    result.skipped.length
      ? h("p", { class: "muted" }, `Skipped on purpose: ${result.skipped.map((s) => `${s.count} ${s.reason}`).join(", ")}.`)
      : null,
    result.channels.length
      ? h("ul", { class: "imported-channels" }, result.channels.map((channel) => digestOffer(channel)))
      : null);
}

function digestOffer(channel) {
  const status = h("span", { role: "status", class: "muted" });
  const button = h("button", {
    type: "button",
    onclick: async () => {
      button.disabled = true;
      status.textContent = " Queuing a digest…";
      try {
        const result = (await gql(TRIGGER, { id: channel.id })).triggerDigest;
        if (result.__typename === "DigestJob") location.hash = jobHref(result.id);
        else status.textContent = ` ${result.message}`;
      } catch (error) {
        status.textContent = ` ${error.message}`;
      } finally {
        button.disabled = false;
      }
    },
  }, `Digest ${channel.name} now`);
  return h("li", { dataset: { channel: channel.id } },
    link(channelHref(channel.id), channel.name),
    ` · ${plural(channel.messageCount, "message")}, ${channel.uncoveredMessageCount} not yet digested `,
    button, status);
}

function documentForm() {
  const file = h("input", { id: "document-file", type: "file", name: "file", required: true,
    accept: ".pdf,.html,.htm,.txt,.md,application/pdf,text/html,text/plain" });
  const title = h("input", { id: "document-title", type: "text", name: "title", autocomplete: "off" });
  const submit = h("button", { type: "submit" }, "Upload");
  const status = h("div", { class: "upload-status" });
  const form = h("form", {
    class: "upload-form",
    "aria-labelledby": "document-heading",
    onsubmit: async (event) => {
      event.preventDefault();
      const chosen = file.files[0];
      if (!chosen) return;
      if (chosen.size > MAX_DOCUMENT_BYTES) {
        fill(status, notice(`${chosen.name} is over ${MAX_DOCUMENT_BYTES / MB} MB.`, "error"));
        return;
      }
      submit.disabled = true;
      fill(status, notice(`Uploading ${chosen.name}…`));
      try {
        const input = {
          contentBase64: await base64Of(chosen),
          contentType: chosen.type || null,
          title: title.value.trim() || null,
        };
        const result = (await gql(INGEST_DOCUMENT, { input })).ingestDocument;
        if (result.__typename === "Document") {
          fill(status, notice(`Stored “${result.title || chosen.name}” (${result.contentType}, ${result.chars} characters).`),
            h("p", {}, link(documentHref(result.id), "Open it to digest it for a query")));
        } else {
          fill(status, notice(result.message, "error"));
        }
      } catch (error) {
        fill(status, notice(error.message, "error"));
      } finally {
        submit.disabled = false;
      }
    },
  },
  field("document-file", "Document file", file, "HTML, PDF or text (at most 10 MB)."),
  field("document-title", "Title (optional)", title),
  h("p", {}, submit));
  return [h("h2", { id: "document-heading" }, "Upload a document"), form, status];
}

export async function uploadPage(view) {
  fill(view.main, pageHeading("Add data"), chatExportForm(), documentForm());
}
