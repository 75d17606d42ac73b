// One report (#/reports/ID): its title, sections of sentences with footnote markers (buttons,
// so Enter and Space work), the source list S1..Sn and the audit. A marker shows its source in
// context with exactly the cited characters marked, by position, never by searching the quote:
// a message source among its neighbours, revisionText[charStart:charEnd] of the cited revision
// even after an edit (views/sources.js);
// a document source as its canonical text around the locator's span, canonicalText[S:E].

import { gql } from "../graphql.js";
import { downloadLinks } from "./downloads.js";
import { fill, h, link, markRanges, notice, pageHeading, plural, utf16Offsets, when } from "../dom.js";
import { ChannelMessages, renderSources } from "./sources.js";
import { contextPanel, footnoteMarker, inContextButton } from "./citations.js";
import { documentHref } from "./documents.js";
import { jobHref } from "./jobs.js";

const SOURCE = `id footnote kind quote channelName messageId externalId revision revisionText author ts charStart charEnd
  documentId documentTitle locator url citedInSections spans { quote }`;
const REPORT = `query($id: ID!) { report(id: $id) {
  id question title writer createdAt jobId
  sections { heading bullets sentences { text citations { sourceId footnote span { quote locator charStart charEnd } } } }
  sources { ${SOURCE} }
  audit { proposed kept dropped reAsked coverage sources reasons } } }`;
const MESSAGE = `query($id: ID!) { node(id: $id) { ... on Message { channelId messageId } } }`;
const DOCUMENT = `query($id: ID!) { document(id: $id) { id title canonicalText pageStarts } }`;

/** Characters (code points) of the document shown either side of a cited span. */
const CONTEXT_CHARS = 400;
const CHAR_LOCATOR = /^(?:page:([1-9][0-9]*):)?char:(0|[1-9][0-9]*)-(0|[1-9][0-9]*)$/;

export function reportHref(id) {
  return `#/reports/${encodeURIComponent(id)}`;
}

/** `char:S-E`, or `page:N:char:S-E` with S and E counted from page N's start (`pageStarts`, from
 * the document), -> {start, end} in the canonical text; null when it cannot be placed. */
export function charSpan(locator, pageStarts) {
  const match = CHAR_LOCATOR.exec(locator ?? "");
  if (!match) return null;
  let offset = 0;
  if (match[1] !== undefined) {
    const page = Number(match[1]);
    if (!pageStarts || page > pageStarts.length) return null;
    offset = pageStarts[page - 1];
  }
  const span = { start: offset + Number(match[2]), end: offset + Number(match[3]) };
  return span.end > span.start ? span : null;
}

function sourceLine(source) {
  if (source.kind === "message") {
    return `${source.author}, ${when(source.ts)}, #${source.channelName}: “${source.quote}”`;
  }
  return `${source.documentTitle || "Untitled document"}, ${source.locator}: “${source.quote}”`;
}

/** Reads what a source's context needs, once per message channel and per document. */
class SourceReader {
  constructor() {
    this.channels = new Map();
    this.documents = new Map();
  }

  async messageContext(container, source) {
    const message = (await gql(MESSAGE, { id: source.messageId })).node;
    if (!message) {
      container.replaceChildren(notice(`Message ${source.externalId} is no longer stored.`, "error"));
      return;
    }
    if (!this.channels.has(message.channelId)) this.channels.set(message.channelId, new ChannelMessages(message.channelId));
    const pointer = { messageId: message.messageId, charStart: source.charStart, charEnd: source.charEnd, revision: source.revision, revisionText: source.revisionText };
    await renderSources(container, { pointer, messageIds: [message.messageId] }, this.channels.get(message.channelId));
  }

  async documentContext(container, source) {
    if (!this.documents.has(source.documentId)) {
      this.documents.set(source.documentId, gql(DOCUMENT, { id: source.documentId }).then((d) => d.document));
    }
    const doc = await this.documents.get(source.documentId);
    const open = link(documentHref(source.documentId), "Open the document");
    if (!doc) {
      container.replaceChildren(notice("The document is no longer stored.", "error"));
      return;
    }
    const span = charSpan(source.locator, doc.pageStarts);
    if (!span) {
      container.replaceChildren(notice(`The locator ${source.locator} cannot be placed in the text here.`, "error"), h("p", {}, open));
      return;
    }
    const text = doc.canonicalText;
    const from = Math.max(0, span.start - CONTEXT_CHARS);
    const [fromUnit, toUnit] = utf16Offsets(text, [from, span.end + CONTEXT_CHARS]);
    const endUnit = toUnit ?? text.length;
    const excerpt = fromUnit === null ? "" : text.slice(fromUnit, endUnit);
    const { fragment, marks } = markRanges(excerpt, [{ start: span.start - from, end: span.end - from }], () => ({
      class: "pointer", "data-char-start": span.start, "data-char-end": span.end,
    }));
    if (!marks[0]) {
      container.replaceChildren(notice(`The span ${source.locator} is outside the document's text.`, "error"), h("p", {}, open));
      return;
    }
    container.replaceChildren(h("article", { class: "document-excerpt cited", dataset: { documentId: source.documentId } },
      h("header", {}, h("strong", {}, doc.title || "Untitled document"), " ", h("span", { class: "badge" }, source.locator)),
      h("pre", { class: "canonical" }, from > 0 ? "…" : "", fragment, endUnit < text.length ? "…" : ""),
      h("p", {}, open)));
  }
}

function marker(source, show) {
  return footnoteMarker(source, sourceLine(source), show);
}

/** One marker per source a sentence cites, opening the span of it this sentence rests on: a
 * document quoted in several places is one source, and its first span is not this sentence's. */
function citedSources(sentence, sources) {
  const cited = new Map();
  for (const citation of sentence.citations) {
    const source = sources.get(citation.sourceId);
    if (source && !cited.has(citation.sourceId)) cited.set(citation.sourceId, citation.span ? { ...source, ...citation.span } : source);
  }
  return [...cited.values()];
}

function citedSentence(sentence, sources, show) {
  const numbers = citedSources(sentence, sources);
  return h("span", { class: "cited-sentence" },
    h("span", { class: "sentence" }, sentence.text), numbers.map((s) => marker(s, show)));
}

function reportSection(section, index, sources, show) {
  const id = `h-report-section-${index}`;
  const sentences = !section.sentences.length
    ? h("p", { class: "muted" }, "None.")
    : section.bullets
    ? h("ul", { class: "report-bullets" }, section.sentences.map((s) => h("li", {}, citedSentence(s, sources, show))))
    : h("p", { class: "report-prose" }, section.sentences.map((s) => [citedSentence(s, sources, show), " "]));
  return h("section", { class: "report-section", "aria-labelledby": section.heading ? id : null },
    section.heading ? h("h2", { id }, section.heading) : null, sentences);
}

/** How much of a source the report quotes and where: "3 passages · cited in Answer, In …". */
function sourceUsage(source) {
  const passages = source.spans?.length ?? 1;
  const cited = source.citedInSections?.length ? ` · cited in ${source.citedInSections.join(", ")}` : "";
  return `${passages} passage${passages === 1 ? "" : "s"}${cited}`;
}

function sourceList(sources, show) {
  return [
    h("h2", { id: "h-footnotes" }, `Sources (${sources.length})`),
    h("ol", { class: "footnotes", "aria-labelledby": "h-footnotes" }, sources.map((source) =>
      h("li", { value: source.footnote, dataset: { footnote: source.footnote, kind: source.kind } },
        h("span", { class: "footnote-source" }, `${source.id} · ${sourceLine(source)}`), " ",
        h("span", { class: "source-usage muted" }, sourceUsage(source)), " ", inContextButton(source, show)))),
  ];
}

function auditFacts(audit) {
  const reasons = Object.entries(audit.reasons ?? {});
  return [
    h("h2", { id: "h-report-audit" }, "Citation audit"),
    h("dl", { class: "facts report-audit", "aria-labelledby": "h-report-audit" },
      h("dt", {}, "Sentences"), h("dd", { class: "audit-sentences" },
        `${audit.kept} kept of ${audit.proposed} proposed, ${audit.dropped} dropped, ${audit.reAsked} re-asked`),
      h("dt", {}, "Supported"), h("dd", { class: "audit-coverage" },
        audit.coverage === null ? "no sentences" : `${Math.round(audit.coverage * 100)}%`),
      h("dt", {}, "Sources"), h("dd", { class: "audit-sources" }, String(audit.sources)),
      h("dt", {}, "Dropped because"), h("dd", { class: "audit-reasons" }, reasons.length
        ? reasons.map(([reason, count]) => `${reason} × ${count}`).join(" · ")
        : "nothing was dropped")),
  ];
}

export async function reportPage(view) {
  const report = (await gql(REPORT, { id: view.id })).report;
  if (!view.isCurrent()) return;
  if (!report) {
    fill(view.main, pageHeading("Report not found"), notice(`No report ${view.id}.`, "error"));
    return;
  }
  const sources = new Map(report.sources.map((s) => [s.id, s]));
  const reader = new SourceReader();
  const { panel, show } = contextPanel({
    describe: (source) => `${source.id}, ${source.kind === "message"
      ? `${source.author}, ${when(source.ts)}` : source.documentTitle || "Untitled document"}`,
    render: (body, source) => {
      body.replaceChildren(notice("Loading the source…"));
      return source.kind === "message" ? reader.messageContext(body, source) : reader.documentContext(body, source);
    },
  });
  fill(
    view.main,
    report.jobId ? h("p", { class: "crumbs" }, link(jobHref(report.jobId), "The job that made it")) : null,
    pageHeading(report.title),
    h("dl", { class: "facts" },
      h("dt", {}, "Question"), h("dd", { class: "report-question" }, report.question),
      h("dt", {}, "Made"), h("dd", {}, `${when(report.createdAt)} by ${report.writer}`)),
    downloadLinks("reports", report.id, "report"),
    report.sections.map((section, index) => reportSection(section, index, sources, show)),
    sourceList(report.sources, show),
    h("p", { class: "muted" }, `${plural(report.sources.length, "source")}; activate a footnote number to read it in context.`),
    panel,
    auditFacts(report.audit),
  );
}
