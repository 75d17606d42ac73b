// Documents, newest first, and one document: its canonical text with the evidence snippets of
// one of its digests marked at their charRange (code points of the canonical text, exactly),
// and that digest's citation audit (which summary sentences and key points its evidence supports).

import { gql } from "../graphql.js";
import { fill, h, link, markRanges, notice, pageHeading, plural, when } from "../dom.js";
import { jobHref } from "./jobs.js";
import { CITATION_AUDIT, auditSummary } from "./citations.js";

const DOCUMENTS = `query($after: String) { documents(first: 50, after: $after) {
  nodes { id title contentType sourceUrl chars pageCount createdAt }
  pageInfo { hasNextPage endCursor } } }`;
const DOCUMENT = `query($id: ID!) { document(id: $id) {
  id title contentType sourceUrl chars pageCount createdAt canonicalText warnings { code message }
  latestDigests(first: 10) { id query summary keyPoints createdAt summarizer evidenceMode
    evidenceSnippets { text locator relevanceScore page charRange verified } ${CITATION_AUDIT} } } }`;

export function documentHref(id, digestId = null) {
  const base = `#/document/${encodeURIComponent(id)}`;
  return digestId ? `${base}?digest=${encodeURIComponent(digestId)}` : base;
}

export async function documentsPage(view) {
  const data = await gql(DOCUMENTS, { after: view.query.get("after") });
  if (!view.isCurrent()) return;
  const documents = data.documents.nodes;
  const more = data.documents.pageInfo.hasNextPage
    ? link(`#/documents?after=${encodeURIComponent(data.documents.pageInfo.endCursor)}`, "Next documents")
    : null;
  fill(
    view.main,
    pageHeading("Documents"),
    documents.length
      ? h("table", { class: "listing" },
          h("thead", {}, h("tr", {}, ["Document", "Type", "Characters", "Added"].map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", {}, documents.map((doc) => h("tr", {},
            h("th", { scope: "row" }, link(documentHref(doc.id), doc.title || doc.sourceUrl || "untitled")),
            h("td", {}, doc.contentType),
            h("td", { class: "number" }, doc.chars),
            h("td", {}, when(doc.createdAt))))))
      : notice("No documents yet."),
    more,
  );
}

function triggerForm(documentId) {
  const input = h("input", { id: "digest-query", type: "text", name: "query", required: true });
  const status = h("span", { role: "status", class: "muted" });
  return h("form", {
    class: "inline-form",
    onsubmit: async (event) => {
      event.preventDefault();
      status.textContent = "Queuing…";
      try {
        const result = (await gql(
          `mutation($id: ID!, $q: String!) { triggerDocumentDigest(documentId: $id, query: $q) { __typename
             ... on DigestJob { id } ... on NotFoundError { message } ... on InvalidInputError { message } } }`,
          { id: documentId, q: input.value },
        )).triggerDocumentDigest;
        if (result.__typename === "DigestJob") location.hash = jobHref(result.id);
        else status.textContent = result.message;
      } catch (error) {
        status.textContent = error.message;
      }
    },
  }, h("label", { for: "digest-query" }, "Digest for a query"), input, h("button", { type: "submit" }, "Queue"), status);
}

export async function documentPage(view) {
  const doc = (await gql(DOCUMENT, { id: view.id })).document;
  if (!view.isCurrent()) return;
  if (!doc) {
    fill(view.main, pageHeading("Document not found"), notice(`No document ${view.id}.`, "error"));
    return;
  }
  const digests = doc.latestDigests;
  const chosen = digests.find((d) => d.id === view.query.get("digest")) ?? digests[0] ?? null;
  const snippets = chosen ? chosen.evidenceSnippets : [];
  const placed = snippets.filter((s) => Array.isArray(s.charRange));
  const { fragment, marks } = markRanges(
    doc.canonicalText,
    placed.map((s) => ({ start: s.charRange[0], end: s.charRange[1] })),
    (range, index) => ({ class: "evidence", id: `evidence-${index + 1}`, tabindex: "-1", "data-char-start": range.start, "data-char-end": range.end }),
  );
  const snippetList = h("ol", { class: "snippets" }, snippets.map((snippet) => {
    const index = placed.indexOf(snippet);
    const mark = index === -1 ? null : marks[index];
    return h("li", {},
      h("blockquote", {}, snippet.text),
      h("p", { class: "muted" }, `${snippet.locator} · relevance ${snippet.relevanceScore.toFixed(2)}${snippet.verified ? " · verified" : " · not verified"}`),
      mark
        ? h("button", { type: "button", onclick: () => { mark.scrollIntoView({ block: "center" }); mark.focus(); } }, "Show in the text")
        : h("p", { class: "notice error" }, "This snippet has no place in the text."));
  }));
  const digestChoice = digests.length > 1
    ? h("nav", { "aria-label": "Digests of this document" }, h("ul", { class: "inline" }, digests.map((d) => h("li", {},
        link(documentHref(doc.id, d.id), `“${d.query}”`, d === chosen ? { "aria-current": "page" } : {})))))
    : null;
  fill(
    view.main,
    pageHeading(doc.title || "Untitled document"),
    h("dl", { class: "facts" },
      h("dt", {}, "Type"), h("dd", {}, doc.contentType),
      h("dt", {}, "Source"), h("dd", {}, doc.sourceUrl ?? "uploaded"),
      h("dt", {}, "Characters"), h("dd", {}, doc.chars),
      h("dt", {}, "Added"), h("dd", {}, when(doc.createdAt))),
    triggerForm(doc.id),
    h("h2", {}, chosen ? `Digest for “${chosen.query}”` : "No digest yet"),
    digestChoice,
    chosen ? [h("p", { class: "summary" }, chosen.summary),
      h("ul", {}, chosen.keyPoints.map((point) => h("li", {}, point))),
      h("h3", {}, `Evidence (${plural(snippets.length, "snippet")})`), snippetList,
      auditSummary(chosen.citationAudit, { prose: "summary" })] : null,
    h("h2", {}, "Canonical text"),
    h("pre", { class: "canonical", tabindex: "0", "aria-label": "Canonical text" }, fragment),
  );
}
