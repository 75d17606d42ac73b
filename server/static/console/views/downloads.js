// Download links for a digest, report or catch-up as a file (/export/digests/ID.md|html|json,
// /export/reports/..., /export/catchups/PERSON.md?since=..., server/exports.py). The export route takes the same bearer token as /graphql, which a plain link
// cannot send: a click fetches the file with the token header and saves it through a Blob URL
// (same origin, so the page's connect-src 'self' allows the fetch). The link's href is the
// route itself, so "copy link" still names the file (it works as is where no token is needed).

import { ApiError, savedToken } from "../graphql.js";
import { h } from "../dom.js";

const FORMATS = [
  ["md", "Markdown"],
  ["html", "HTML"],
  ["json", "JSON"],
];

/** The file name of a Content-Disposition header, kept to safe characters, or `fallback`. */
function fileName(disposition, fallback) {
  const name = /filename="([A-Za-z0-9._-]+)"/.exec(disposition ?? "")?.[1];
  return name || fallback;
}

async function save(path, fallback, status) {
  const headers = {};
  const token = savedToken();
  if (token) headers.authorization = `Bearer ${token}`;
  let response;
  try {
    response = await fetch(path, { headers, credentials: "omit" });
  } catch (error) {
    throw new ApiError(`digestd did not answer (${error.message})`);
  }
  if (!response.ok) {
    let message = `HTTP ${response.status}`;
    try {
      message = (await response.json()).errors?.[0]?.message ?? message;
    } catch {
      // not the API's error body: the status says enough
    }
    throw new ApiError(message, null, response.status);
  }
  const blob = await response.blob();
  const url = URL.createObjectURL(blob);
  const anchor = h("a", { href: url, download: fileName(response.headers.get("content-disposition"), fallback), hidden: true });
  document.body.append(anchor);
  anchor.click();
  anchor.remove();
  // Long enough for the browser to have started saving; the Blob is only held until then.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  status.textContent = "";
}

/**
 * "Download: Markdown · HTML · JSON" for `/export/{collection}/{id}.{format}?{query}`
 * (`query`: URLSearchParams, e.g. a catch-up's `since`).
 */
export function downloadLinks(collection, id, label, query = null) {
  const status = h("span", { class: "muted", role: "status" });
  const search = query && query.toString() ? `?${query}` : "";
  const links = FORMATS.map(([format, name]) => {
    const path = `/export/${collection}/${encodeURIComponent(id)}.${format}${search}`;
    return h("a", {
      href: path,
      class: "download",
      dataset: { format },
      "aria-label": `Download the ${label} as ${name}`,
      onclick: (event) => {
        event.preventDefault();
        status.textContent = "Downloading…";
        save(path, `digestd-${collection}.${format}`, status).catch((error) => {
          status.textContent = error.needsToken ? "The export needs a token: enter it above." : (error.message || String(error));
        });
      },
    }, name);
  });
  return h("p", { class: "downloads" }, "Download: ",
    links.flatMap((anchor, index) => (index ? [" · ", anchor] : [anchor])), " ", status);
}
