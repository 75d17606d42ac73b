// One digest with every section, under a table of contents; each section folds (<details>, its
// heading the summary). The overview and highlights are cited sentences with footnotes
// (views/citations.js); each item has a "Sources" button that opens its cited messages in
// context, with a pointer's exact characters marked (views/sources.js).

import { downloadLinks } from "./downloads.js";
import { gql } from "../graphql.js";
import { fill, flagList, h, link, notice, pageHeading, plural, rowNumber, when } from "../dom.js";
import { channelHref } from "./channels.js";
import { CITATION_AUDIT, CITED_SENTENCE, PERIODS, citedPeriods, citedProse, digestContext } from "./citations.js";
import { deleteDigestSection } from "./deletion.js";
import { ChannelMessages, renderSources } from "./sources.js";

const FLAGS = "flags { code message }";
export const POINTER = "pointer { messageId charStart charEnd matchKind revision revisionText resolvedText }";
const DIGEST = `query($id: ID!) { digest(id: $id) {
  id channelId title overview highlights createdAt windowStart windowEnd messageCount extractor jobId
  signalQuality { level reason } searchKeywords ${FLAGS}
  overviewSentences { ${CITED_SENTENCE} } highlightSentences { ${CITED_SENTENCE} } ${CITATION_AUDIT}
  channel { id name }
  messageCoverage { messageCount firstMessageAt lastMessageAt catchUp since until
    leftOut { firstMessageId lastMessageId firstAt lastAt messageCount reason } }
  topics { title summary messageIds }
  decisions { text messageIds ${FLAGS} }
  actionItems { text owner messageIds ${FLAGS} }
  openQuestions { text askedBy messageIds ${FLAGS} }
  links { url description messageIds ${FLAGS} }
  artifacts { kind title language ${POINTER} ${FLAGS} }
  knowledgeItems { id key kind title verbatim content text messageIds ${POINTER} ${FLAGS} }
  rejections { stage field label reason } } }`;
// Its own request: with every section's items the digest's would cost more than one may.
const DIGEST_PERIODS = `query($id: ID!) { digest(id: $id) { ${PERIODS} } }`;

let sourcesCounter = 0;

/** An item: its text, then a disclosure button that shows its sources below it. */
export function itemEntry(content, source, messages, className) {
  const panelId = `sources-${++sourcesCounter}`;
  const panel = h("div", { id: panelId, class: "sources", hidden: true });
  let rendered = false;
  const button = h("button", {
    type: "button",
    class: "show-sources",
    "aria-expanded": "false",
    "aria-controls": panelId,
    onclick: async () => {
      const open = button.getAttribute("aria-expanded") !== "true";
      button.setAttribute("aria-expanded", String(open));
      button.textContent = open ? "Hide sources" : "Sources";
      panel.hidden = !open;
      if (open && !rendered) {
        rendered = true;
        await renderSources(panel, source, messages);
      }
    },
  }, "Sources");
  return h("li", { class: `item ${className}` }, h("div", { class: "item-text" }, content), button, panel);
}

/**
 * A section that folds: its heading is the <details> summary, so a click or Enter on it opens or
 * closes the section. Sections with entries start open, empty ones closed.
 */
function foldable(title, className, content, open) {
  return h("section", { class: `digest-section ${className}`, id: `s-${className}`, "aria-labelledby": `h-${className}` },
    h("details", { open },
      h("summary", {}, h("h2", { id: `h-${className}` }, title)),
      content));
}

function section(title, className, entries, empty = "None.") {
  return foldable(`${title} (${entries.length})`, className,
    entries.length ? h("ul", { class: "items" }, entries) : h("p", { class: "muted" }, empty),
    entries.length > 0);
}

/**
 * The contents: a link per section (its heading's words). Following one opens the section,
 * scrolls to it and moves focus to its summary. The links keep the page's own address: the
 * fragment of the URL is the console's route, so it cannot also name a section.
 */
function tableOfContents(sections) {
  const entries = sections.map((element) => {
    const heading = element.querySelector("h2");
    return h("li", {}, h("a", {
      href: location.hash,
      dataset: { section: element.id },
      onclick: (event) => {
        event.preventDefault();
        const details = element.querySelector("details");
        details.open = true;
        const summary = details.querySelector("summary");
        summary.scrollIntoView({ block: "start" });
        summary.focus({ preventScroll: true });
      },
    }, heading.textContent));
  });
  return h("nav", { class: "toc", "aria-labelledby": "h-toc" },
    h("h2", { id: "h-toc" }, "Contents"), h("ol", {}, entries));
}

function safeLink(url) {
  // Chat links are untrusted: only http(s) becomes a link; anything else stays text.
  try {
    const parsed = new URL(url);
    if (parsed.protocol === "http:" || parsed.protocol === "https:") {
      return h("a", { href: parsed.href, rel: "noopener noreferrer nofollow" }, url);
    }
  } catch {
    // not a URL: shown as text
  }
  return h("code", {}, url);
}

export function knowledgeContent(item) {
  return [
    h("strong", {}, item.title), " ", h("span", { class: "badge" }, item.kind),
    item.verbatim ? h("span", { class: "badge" }, "verbatim") : null,
    item.verbatim ? h("pre", { class: "quote" }, item.text ?? "") : h("p", {}, item.content ?? item.text ?? ""),
    flagList(item.flags),
  ];
}

export async function digestPage(view) {
  const [answer, told] = await Promise.all([gql(DIGEST, { id: view.id }), gql(DIGEST_PERIODS, { id: view.id })]);
  const digest = answer.digest;
  const periods = told.digest?.periods ?? [];
  if (!view.isCurrent()) return;
  if (!digest) {
    fill(view.main, pageHeading("Digest not found"), notice(`No digest ${view.id}.`, "error"));
    return;
  }
  const coverage = digest.messageCoverage;
  const messages = new ChannelMessages(digest.channelId, coverage.firstMessageAt ?? digest.windowStart);
  const entry = (content, source, className) => itemEntry(content, source, messages, className);
  fill(
    view.main,
    h("p", { class: "crumbs" }, digest.channel ? link(channelHref(digest.channel.id), `Channel ${digest.channel.name}`) : null),
    pageHeading(digest.title),
    h("dl", { class: "facts" },
      h("dt", {}, "Signal"), h("dd", {}, `${digest.signalQuality.level}: ${digest.signalQuality.reason}`),
      h("dt", {}, "Messages"), h("dd", {}, `${digest.messageCount} (${when(coverage.firstMessageAt)} – ${when(coverage.lastMessageAt)})`),
      h("dt", {}, "Made"), h("dd", {}, `${when(digest.createdAt)} by ${digest.extractor}`),
      digest.jobId ? [h("dt", {}, "Job"), h("dd", {}, link(`#/job/${encodeURIComponent(digest.jobId)}`, "the job that made it"))] : null),
    flagList(digest.flags),
    downloadLinks("digests", digest.id, "digest"),
  );
  const context = digestContext(messages);
  const sections = [
    foldable("Overview", "overview", citedProse(digest, messages, context), true),
    // A window of several days, told period by period (the overview above is its roll-up).
    periods.length
      ? foldable(`By ${periods[0].granularity.toLowerCase()} (${periods.length})`, "periods",
        citedPeriods(periods, context), true)
      : null,
    section("Topics", "topics", digest.topics.map((topic) =>
      entry([h("strong", {}, topic.title), h("p", {}, topic.summary)], topic, "topic"))),
    section("Decisions", "decisions", digest.decisions.map((item) =>
      entry([h("p", {}, item.text), flagList(item.flags)], item, "decision"))),
    section("Action items", "action-items", digest.actionItems.map((item) =>
      entry([h("p", {}, item.text, item.owner ? h("span", { class: "owner" }, ` — ${item.owner}`) : null), flagList(item.flags)], item, "action-item"))),
    section("Open questions", "open-questions", digest.openQuestions.map((item) =>
      entry([h("p", {}, item.text, item.askedBy ? h("span", { class: "owner" }, ` — asked by ${item.askedBy}`) : null), flagList(item.flags)], item, "open-question"))),
    section("Links", "links", digest.links.map((item) =>
      entry([safeLink(item.url), item.description ? h("p", {}, item.description) : null, flagList(item.flags)], item, "link"))),
    section("Artifacts", "artifacts", digest.artifacts.map((item) =>
      entry([h("strong", {}, item.title), " ", h("span", { class: "badge" }, item.language ? `${item.kind} · ${item.language}` : item.kind),
        h("pre", { class: "quote" }, item.pointer.resolvedText ?? ""), flagList(item.flags)], { pointer: item.pointer }, "artifact"))),
    section("Knowledge items", "knowledge-items", digest.knowledgeItems.map((item) =>
      entry(knowledgeContent(item), item, "knowledge-item"))),
    section("Left out", "left-out", coverage.leftOut.map((range) => h("li", { class: "item" },
      `${plural(range.messageCount, "message")} (${range.firstMessageId} – ${range.lastMessageId}): ${range.reason}`)),
    "Nothing: the digest read every message of its window."),
    section("Rejected by validation", "rejections", digest.rejections.map((r) => h("li", { class: "item" },
      `${r.stage} · ${r.field} · ${r.label}: ${r.reason}`))),
  ];
  const shown = sections.filter(Boolean);
  view.main.append(tableOfContents(shown), ...shown, ...deleteDigestSection(digest, rowNumber(digest.id) ?? digest.id));
}
