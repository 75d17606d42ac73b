// DOM building for untrusted text: elements are created node by node and text is only ever set
// as text (text nodes, textContent); no HTML string is parsed anywhere. The page's policy
// requires Trusted Types with no policy, so assigning an HTML string to any sink would throw.

/**
 * h("a", {href: "#/x", class: "c", onclick: f, "aria-label": "..."}, "text", node, [more])
 * Strings and numbers become text nodes; null, undefined and false are skipped.
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      element.className = value;
    } else if (name === "dataset") {
      Object.assign(element.dataset, value);
    } else if (name === "value" || name === "checked" || name === "max") {
      element[name] = value;
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, children);
  return element;
}

function append(parent, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.append(child);
    else parent.append(document.createTextNode(String(child)));
  }
}

/** Replaces everything inside `element` with `children`. */
export function fill(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

/**
 * UTF-16 positions of code-point offsets in `text`. The API counts characters as Python does
 * (code points), JavaScript strings index UTF-16 units: an emoji is one of the first, two of
 * the second. Returns null for an offset past the end.
 */
export function utf16Offsets(text, offsets) {
  const wanted = [...new Set(offsets)].sort((a, b) => a - b);
  const found = new Map();
  let codePoint = 0;
  let unit = 0;
  let next = 0;
  for (const character of text) {
    while (next < wanted.length && wanted[next] <= codePoint) found.set(wanted[next++], unit);
    if (next === wanted.length) break;
    codePoint += 1;
    unit += character.length;
  }
  while (next < wanted.length && wanted[next] <= codePoint) found.set(wanted[next++], unit);
  return offsets.map((offset) => (found.has(offset) && offset >= 0 ? found.get(offset) : null));
}

/**
 * `text` as text nodes with each [start, end) range (code points, as the API gives them) in a
 * <mark>: exactly those characters, found by position, never by searching for the quote.
 * Ranges are sorted; where two overlap the later one starts where the earlier one ends.
 * Returns {fragment, marks} (marks[i] is ranges[i]'s <mark>, or null when it is out of range).
 */
export function markRanges(text, ranges, markAttributes = () => ({})) {
  const units = utf16Offsets(text, ranges.flatMap((r) => [r.start, r.end]));
  const placed = ranges.map((range, index) => ({
    index, range, start: units[2 * index], end: units[2 * index + 1],
  }));
  const marks = ranges.map(() => null);
  const fragment = document.createDocumentFragment();
  let position = 0;
  const inOrder = placed
    .filter((p) => p.start !== null && p.end !== null && p.start < p.end)
    .sort((a, b) => a.start - b.start || b.end - a.end);
  for (const piece of inOrder) {
    const start = Math.max(piece.start, position);
    if (start >= piece.end) continue;
    fragment.append(document.createTextNode(text.slice(position, start)));
    const mark = h("mark", markAttributes(piece.range, piece.index), text.slice(start, piece.end));
    fragment.append(mark);
    marks[piece.index] = mark;
    position = piece.end;
  }
  fragment.append(document.createTextNode(text.slice(position)));
  return { fragment, marks };
}

export function when(iso) {
  if (!iso) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

export function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

/** A heading that receives focus after navigation (so keyboard and screen-reader users land on it). */
export function pageHeading(text) {
  return h("h1", { tabindex: "-1", class: "page-heading" }, text);
}

export function link(href, text, attributes = {}) {
  return h("a", { href, ...attributes }, text);
}

/** A short notice: role=alert for errors (announced), role=status otherwise. */
export function notice(text, kind = "info") {
  return h("p", { class: `notice ${kind}`, role: kind === "error" ? "alert" : "status" }, text);
}

export function flagList(flags) {
  if (!flags?.length) return null;
  return h("ul", { class: "flags" }, flags.map((f) => h("li", { title: f.message }, f.code)));
}

/** The row number inside a global id (base64 of "DigestJob:123", "Digest:7"), or null. */
export function rowNumber(id) {
  try {
    const number = atob(id).split(":")[1];
    return /^\d+$/.test(number ?? "") ? number : null;
  } catch {
    return null;
  }
}
