// A digest's cited prose: the overview and highlight sentences, each followed by its footnote
// markers (the numbers the API gives: contiguous over the overview, then the highlights, each
// message once), the footnote list, and the citation audit. A marker (a button, so Enter and
// Space work too) shows the cited message among its neighbours, right under the sentence, with
// exactly revisionText[charStart:charEnd] of that citation marked, by position, as item pointers
// are (views/sources.js), and moves focus to the mark; "Back to the sentence" returns it.

import { h, notice, plural, when } from "../dom.js";
import { renderSources } from "./sources.js";

export const CITED_SENTENCE = "text citations { messageId author ts quote charStart charEnd revision revisionText footnote }";
export const CITATION_AUDIT = `citationAudit { sentencesKept sentencesDropped overviewCitedShare titleReplaced
  fields { field proposed kept cited } reasons { reason count } }`;

/** A citation in the shape of an item's pointer, so it is marked like any pointer. */
function asPointer(citation) {
  const { messageId, charStart, charEnd, revision, revisionText } = citation;
  return { messageId, charStart, charEnd, revision, revisionText };
}

/** The sentence's citations, one per footnote number (a marker is shown once per sentence). */
function byFootnote(sentence) {
  const seen = new Map();
  for (const citation of sentence.citations) {
    if (!seen.has(citation.footnote)) seen.set(citation.footnote, citation);
  }
  return [...seen.values()];
}

function sourceLine(citation) {
  return `${citation.author}, ${when(citation.ts)}, “${citation.quote}” (message ${citation.messageId})`;
}

/**
 * One region that shows a footnote's source in context. `show(source, opener)` writes
 * `describe(source)` as its heading, lets `render(body, source)` fill it, then focuses the mark of
 * the cited characters (or, when there is none, says the quote); the back button returns focus
 * to `opener`. Shared by digests and reports. With `nearOpener`, the region moves to right under
 * the sentence (or the footnote) whose marker opened it, so the reader does not lose the place.
 */
export function contextPanel({ describe, render, nearOpener = false }) {
  const heading = h("h3", { id: "h-citation-context" });
  const body = h("div", { class: "sources" });
  let opener = null;
  const back = h("button", { type: "button", class: "back-to-sentence", onclick: () => opener?.focus() }, "Back to the sentence");
  const panel = h("section", { id: "citation-context", class: "citation-context", "aria-labelledby": "h-citation-context", hidden: true }, heading, body, back);
  let showing = 0;
  async function show(source, from) {
    const current = ++showing;
    opener = from;
    if (nearOpener) placeUnder(panel, from);
    panel.hidden = false;
    heading.textContent = `Footnote ${source.footnote}: ${describe(source)}`;
    panel.dataset.footnote = source.footnote;
    try {
      await render(body, source);
    } catch (error) {
      if (current === showing) body.replaceChildren(notice(`Could not load the source: ${error.message}`, "error"));
    }
    if (current !== showing) return; // another marker was activated meanwhile
    const mark = body.querySelector(".cited mark.pointer");
    if (mark) {
      mark.tabIndex = -1;
      mark.scrollIntoView({ block: "center" });
      mark.focus();
    } else {
      body.append(notice(`Quoted: “${source.quote}”`));
      heading.tabIndex = -1;
      heading.focus();
    }
  }
  return { panel, show };
}

/** Puts `panel` right after the sentence holding `opener`, else at the end of its list item. */
function placeUnder(panel, opener) {
  const sentence = opener?.closest(".cited-sentence");
  if (sentence) {
    sentence.after(panel);
    return;
  }
  opener?.closest("li")?.append(panel);
}

/** A footnote number as a button (so Enter and Space work) that shows its source. */
export function footnoteMarker(source, title, show) {
  const button = h("button", {
    type: "button",
    class: "footnote-ref",
    dataset: { footnote: source.footnote },
    "aria-label": `Footnote ${source.footnote}`,
    title,
    "aria-controls": "citation-context",
    onclick: () => show(source, button),
  }, String(source.footnote));
  return h("sup", {}, button);
}

/** The footnote list's "In context" button. */
export function inContextButton(source, show) {
  const button = h("button", {
    type: "button",
    class: "show-citation",
    "aria-label": `Show footnote ${source.footnote} in context`,
    onclick: () => show(source, button),
  }, "In context");
  return button;
}

function marker(citation, show) {
  return footnoteMarker(citation, sourceLine(citation), show);
}

function citedSentence(sentence, show) {
  return h("span", { class: "cited-sentence" },
    h("span", { class: "sentence" }, sentence.text), byFootnote(sentence).map((c) => marker(c, show)));
}

/** Each footnote number once, with the first citation that carries it (as overviewMarkdown does). */
function footnotes(sentences) {
  const first = new Map();
  for (const citation of sentences.flatMap((s) => s.citations)) {
    if (!first.has(citation.footnote)) first.set(citation.footnote, citation);
  }
  return [...first.values()].sort((a, b) => a.footnote - b.footnote);
}

function footnoteList(sentences, show) {
  const notes = footnotes(sentences);
  if (!notes.length) return null;
  return [
    h("h3", { id: "h-footnotes" }, "Footnotes"),
    h("ol", { class: "footnotes", "aria-labelledby": "h-footnotes" }, notes.map((citation) =>
      h("li", { value: citation.footnote, dataset: { footnote: citation.footnote } },
        h("span", { class: "footnote-source" }, sourceLine(citation)), " ", inContextButton(citation, show)))),
  ];
}

/** The audit in a few lines: kept / dropped, the cited share, each field, the reasons. A
 * document digest's audit has the same shape, its summary in the overview's place. */
export function auditSummary(audit, { prose = "overview" } = {}) {
  if (!audit) return h("p", { class: "muted citation-audit" }, "No citation audit: this digest was stored before citations were checked.");
  const share = audit.overviewCitedShare === null ? `no ${prose}` : `${Math.round(audit.overviewCitedShare * 100)}%`;
  const field = (f) => `${f.field} ${f.kept} of ${f.proposed}${f.cited === null || f.cited === undefined ? "" : `, ${f.cited} cited`}`;
  return h("div", { class: "citation-audit" },
    h("h3", { id: "h-citation-audit" }, "Citation audit"),
    h("dl", { class: "facts", "aria-labelledby": "h-citation-audit" },
      h("dt", {}, "Sentences"), h("dd", { class: "audit-sentences" }, `${audit.sentencesKept} kept, ${audit.sentencesDropped} dropped`),
      h("dt", {}, `${prose[0].toUpperCase()}${prose.slice(1)} cited`), h("dd", { class: "audit-share" }, share),
      h("dt", {}, "Fields"), h("dd", { class: "audit-fields" }, audit.fields.map(field).join(" · ")),
      audit.titleReplaced ? [h("dt", {}, "Title"), h("dd", {}, "replaced: the proposed one was not supported")] : null,
      h("dt", {}, "Reasons"), h("dd", { class: "audit-reasons" }, audit.reasons.length
        ? audit.reasons.map((r) => `${r.reason} × ${r.count}`).join(" · ")
        : "none: nothing was dropped")));
}

/**
 * The overview section's content. A digest stored before citations has no sentences: its
 * overview text and highlights show as they were.
 */
export function citedProse(digest, messages, context = digestContext(messages)) {
  const overview = digest.overviewSentences;
  const highlights = digest.highlightSentences;
  if (!overview.length && !highlights.length) {
    return [
      h("p", { class: "overview-text" }, digest.overview),
      digest.highlights.length ? h("ul", {}, digest.highlights.map((line) => h("li", {}, line))) : null,
      auditSummary(digest.citationAudit),
    ];
  }
  const { panel, show } = context;
  const sentences = [...overview, ...highlights];
  return [
    // A <div>, not a <p>: the context region opens between two of its sentences.
    overview.length ? h("div", { class: "overview-text" }, overview.map((s) => [citedSentence(s, show), " "])) : null,
    highlights.length ? [h("h3", {}, "Highlights"),
      h("ul", { class: "highlights" }, highlights.map((s) => h("li", {}, citedSentence(s, show))))] : null,
    footnoteList(sentences, show),
    h("p", { class: "muted" }, `${plural(footnotes(sentences).length, "source")}; activate a footnote number to read it in context.`),
    panel,
    auditSummary(digest.citationAudit),
  ];
}

/**
 * The one context region of a digest page: a footnote marker of the overview, the highlights or
 * a period shows its cited message there, right under the sentence.
 */
export function digestContext(messages) {
  return contextPanel({
    nearOpener: true,
    describe: (citation) => `${citation.author}, ${when(citation.ts)}`,
    render: (body, citation) => renderSources(body, { pointer: asPointer(citation), messageIds: [citation.messageId] }, messages),
  });
}

// Without each citation's revisionText (the cited message's text is read when its context opens):
// sixty periods of quoted revisions would be more than one request may cost.
export const PERIODS = `periods { label granularity start end messageCount conversationCount
  overview { text citations { messageId author ts quote charStart charEnd revision footnote } } }`;

/**
 * A multi-day digest period by period: each period's label and counts, then its sentences with
 * their footnote markers (the digest's one numbering, continued after the highlights).
 */
export function citedPeriods(periods, context) {
  return h("ol", { class: "periods" }, periods.map((period) => h("li", { class: "period" },
    h("h3", {}, period.label),
    h("p", { class: "muted" }, `${plural(period.messageCount, "message")}, ${plural(period.conversationCount, "conversation")}`),
    period.overview.length
      ? h("ul", { class: "period-sentences" }, period.overview.map((s) => h("li", {}, citedSentence(s, context.show))))
      : h("p", { class: "muted" }, "Nothing worth telling."))));
}
