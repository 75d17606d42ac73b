// The console's shell: the token field, hash routing (#/channels, #/channel/ID, #/digest/ID,
// #/jobs, #/job/ID, #/search?q=, #/documents, #/document/ID,
// #/reports, #/reports/ID, #/conversations?channel=ID, #/entities?channel=ID, #/upload,
// #/catchup?person=NAME&since=ISO, #/deliveries?state=DEAD&after=CURSOR), and
// focus management: after each navigation the new page's heading takes focus, so keyboard and
// screen-reader users start there.

import { ApiError, saveToken, savedToken } from "./graphql.js";
import { fill, notice, pageHeading } from "./dom.js";
import { channelPage, channelsPage } from "./views/channels.js";
import { digestPage } from "./views/digest.js";
import { jobPage, jobsPage } from "./views/jobs.js";
import { searchPage } from "./views/search.js";
import { documentPage, documentsPage } from "./views/documents.js";
import { reportPage } from "./views/report.js";
import { reportsPage } from "./views/reports.js";
import { conversationsPage } from "./views/conversations.js";
import { entitiesPage } from "./views/entities.js";
import { uploadPage } from "./views/upload.js";
import { catchUpPage } from "./views/catchup.js";
import { deliveriesPage } from "./views/deliveries.js";

const ROUTES = {
  channels: { page: channelsPage, section: "channels" },
  channel: { page: channelPage, section: "channels", needsId: true },
  digest: { page: digestPage, section: "channels", needsId: true },
  conversations: { page: conversationsPage, section: "channels" },
  entities: { page: entitiesPage, section: "channels" },
  jobs: { page: jobsPage, section: "jobs" },
  job: { page: jobPage, section: "jobs", needsId: true },
  search: { page: searchPage, section: "search" },
  documents: { page: documentsPage, section: "documents" },
  document: { page: documentPage, section: "documents", needsId: true },
  // #/reports lists reports and asks for one; #/reports/ID is one report.
  reports: { page: (view) => (view.id ? reportPage(view) : reportsPage(view)), section: "reports" },
  upload: { page: uploadPage, section: "upload" },
  catchup: { page: catchUpPage, section: "catchup" },
  deliveries: { page: deliveriesPage, section: "deliveries" },
};

const main = document.getElementById("main");
let navigation = 0;
let leavePage = () => {};

/** "#/digest/abc%3D?x=1" -> {name: "digest", id: "abc=", query: URLSearchParams("x=1")} */
export function parseHash(hash) {
  const [path, search = ""] = hash.replace(/^#\/?/, "").split("?", 2);
  const slash = path.indexOf("/");
  const name = slash === -1 ? path : path.slice(0, slash);
  const id = slash === -1 ? null : decodeURIComponent(path.slice(slash + 1));
  return { name: name || "channels", id, query: new URLSearchParams(search) };
}

async function route() {
  const current = ++navigation;
  leavePage();
  leavePage = () => {};
  const { name, id, query } = parseHash(location.hash);
  const target = ROUTES[name];
  markSection(target?.section);
  const view = {
    main,
    id,
    query,
    isCurrent: () => current === navigation,
    onLeave: (cleanup) => { leavePage = cleanup; },
  };
  if (!target || (target.needsId && !id)) {
    fill(main, pageHeading("Not found"), notice(`There is no page at ${location.hash}.`, "error"));
    focusHeading();
    return;
  }
  fill(main, notice("Loading…"));
  try {
    await target.page(view);
  } catch (error) {
    if (!view.isCurrent()) return;
    showError(error);
  }
  if (view.isCurrent()) focusHeading();
}

function showError(error) {
  if (error instanceof ApiError && error.needsToken) {
    fill(
      main,
      pageHeading("A token is needed"),
      notice(
        savedToken()
          ? "digestd refused the token in the token field. Enter another one above."
          : "This digestd asks for an API token. Enter it in the token field above.",
        "error",
      ),
    );
    document.getElementById("token").focus();
    return;
  }
  fill(main, pageHeading("Something went wrong"), notice(error.message || String(error), "error"));
}

function focusHeading() {
  if (document.activeElement && document.activeElement.id === "token") return;
  const heading = main.querySelector("h1");
  (heading || main).focus({ preventScroll: false });
}

function markSection(section) {
  for (const item of document.querySelectorAll("nav a[data-section]")) {
    if (item.dataset.section === section) item.setAttribute("aria-current", "page");
    else item.removeAttribute("aria-current");
  }
}

function setUpToken() {
  const form = document.getElementById("token-form");
  const input = document.getElementById("token");
  const state = document.getElementById("token-state");
  const describe = () => {
    state.textContent = savedToken() ? "Token set for this session." : "No token.";
  };
  input.value = savedToken();
  describe();
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    saveToken(input.value.trim());
    describe();
    route();
  });
  document.getElementById("token-forget").addEventListener("click", () => {
    saveToken("");
    input.value = "";
    describe();
    route();
  });
}

setUpToken();
window.addEventListener("hashchange", route);
route();
