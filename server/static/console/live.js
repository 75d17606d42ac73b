// Live job progress: the `jobProgress(id)` subscription over graphql-transport-ws when the API
// has it (asked once by introspection), else `job(id)` every second. Either way the caller gets
// the job's state as it changes, until a terminal status.

import { gql, savedToken, subscriptionFields } from "./graphql.js";

export const TERMINAL = new Set(["SUCCEEDED", "PARTIAL", "FAILED", "CANCELLED"]);
const POLL_MS = 1000;

// What a job view shows, by field; a subscription payload type gets the ones it has.
const JOB_SELECTIONS = {
  id: "id",
  kind: "kind",
  status: "status",
  phase: "phase",
  progress: "progress { chunksDone chunksTotal fraction etaSeconds }",
  attempts: "attempts",
  maxAttempts: "maxAttempts",
  error: "error",
  resultMessage: "resultMessage",
  cancelRequested: "cancelRequested",
  channelId: "channelId",
  digestId: "digestId",
  documentId: "documentId",
  documentDigestId: "documentDigestId",
  reportId: "reportId",
  query: "query",
  createdAt: "createdAt",
  startedAt: "startedAt",
  finishedAt: "finishedAt",
  updatedAt: "updatedAt",
  stats: "stats { messages chunks chunksFromCache llmCalls itemsRejected durationSeconds }",
  warnings: "warnings { code message }",
};
export const JOB_FIELDS = Object.values(JOB_SELECTIONS).join(" ");

export async function fetchJob(id) {
  const data = await gql(`query($id: ID!) { job(id: $id) { ${JOB_FIELDS} } }`, { id });
  return data.job;
}

/**
 * Calls onJob(job, via) with each state of the job ("subscription" or "polling") and
 * onError(error) on failure. Returns a function that stops watching.
 */
export function watchJob(id, onJob, onError) {
  let stopped = false;
  let stopCurrent = () => {};
  const deliver = (job, via) => {
    if (stopped || !job) return;
    onJob(job, via);
    if (TERMINAL.has(job.status)) stop();
  };
  const poll = () => {
    let timer = null;
    const tick = async () => {
      try {
        deliver(await fetchJob(id), "polling");
      } catch (error) {
        if (!stopped) onError(error);
      }
      if (!stopped) timer = setTimeout(tick, POLL_MS);
    };
    tick();
    stopCurrent = () => clearTimeout(timer);
  };
  const stop = () => {
    stopped = true;
    stopCurrent();
  };
  (async () => {
    let field = null;
    try {
      field = (await subscriptionFields()).find((f) => f.name === "jobProgress");
    } catch {
      field = null; // introspection refused or unavailable: polling still works
    }
    if (stopped) return;
    if (!field || !field.fields.includes("status") || typeof WebSocket !== "function") {
      poll();
      return;
    }
    const selection = Object.entries(JOB_SELECTIONS)
      .filter(([name]) => field.fields.includes(name))
      .map(([, text]) => text)
      .join(" ");
    stopCurrent = subscribe(
      `subscription($id: ID!) { jobProgress(id: $id) { ${selection} } }`,
      { id },
      (data) => deliver(data.jobProgress, "subscription"),
      () => { if (!stopped) poll(); }, // the socket failed or ended early: poll the rest
    );
  })();
  return stop;
}

/**
 * A minimal graphql-transport-ws client for one subscription on its own socket:
 * connection_init (with the bearer token) -> connection_ack -> subscribe -> next... -> complete.
 * onFallback() is called when the socket fails or the subscription ends with an error.
 */
export function subscribe(query, variables, onData, onFallback) {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const socket = new WebSocket(`${scheme}//${location.host}/graphql`, "graphql-transport-ws");
  let finished = false;
  const finish = (fallback) => {
    if (finished) return;
    finished = true;
    if (socket.readyState === WebSocket.OPEN) socket.close(1000, "done");
    if (fallback) onFallback();
  };
  const send = (message) => socket.send(JSON.stringify(message));
  socket.addEventListener("open", () => {
    const token = savedToken();
    send({ type: "connection_init", payload: token ? { Authorization: `Bearer ${token}` } : {} });
  });
  socket.addEventListener("message", (event) => {
    let message;
    try {
      message = JSON.parse(event.data);
    } catch {
      finish(true);
      return;
    }
    switch (message.type) {
      case "connection_ack":
        send({ id: "1", type: "subscribe", payload: { query, variables } });
        break;
      case "ping":
        send({ type: "pong" });
        break;
      case "next":
        if (message.payload?.errors?.length || !message.payload?.data) finish(true);
        else onData(message.payload.data);
        break;
      case "error":
        finish(true);
        break;
      case "complete": // before a terminal status (after one, watchJob has already stopped)
        finish(true);
        break;
      default:
        break;
    }
  });
  socket.addEventListener("error", () => finish(true));
  socket.addEventListener("close", () => finish(true));
  return () => {
    if (!finished && socket.readyState === WebSocket.OPEN) {
      send({ id: "1", type: "complete" });
    }
    finish(false);
  };
}
