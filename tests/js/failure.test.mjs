// What clients get when the worker cannot do its job: short plain-text 5xx, never a crash.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./support/worker.mjs";
import { DEAD_ORIGIN } from "./support/origin.mjs";

const workers = [];
after(() => Promise.all(workers.map((w) => w.dispose())));

async function worker(bindings) {
  const w = await startWorker(bindings);
  workers.push(w);
  return w;
}

async function expectFailure(res, status, text) {
  assert.equal(res.status, status);
  assert.equal(res.headers.get("content-type"), "text/plain; charset=utf-8");
  assert.equal(await res.text(), text);
}

test("an unreachable origin is a 502", async () => {
  const w = await worker({ ORIGIN_URL: DEAD_ORIGIN });
  for (const method of ["GET", "POST"]) {
    const res = await w.dispatchFetch("http://edge.test/a", {
      method,
      body: method === "POST" ? "x" : undefined,
    });
    await expectFailure(res, 502, "edgewise: origin unreachable");
  }
});

test("a missing or invalid ORIGIN_URL is a 500, request after request", async () => {
  for (const bindings of [
    {},
    { ORIGIN_URL: "" },
    { ORIGIN_URL: "not a url" },
    { ORIGIN_URL: "ftp://127.0.0.1" },
    { ORIGIN_URL: "http://user:pw@127.0.0.1" },
    { ORIGIN_URL: "http://127.0.0.1:99999" },
  ]) {
    const w = await worker(bindings);
    for (let i = 0; i < 2; i++) {
      const res = await w.dispatchFetch("http://edge.test/");
      await expectFailure(res, 500, "edgewise: worker misconfigured");
    }
  }
});

// wrangler passes a var written unquoted in [vars] as JSON. Read as unset, TOKEN_PATHS as a
// list turned the token check off (the origin served /private), and a list of
// INTERNAL_HEADERS let its names through: now each is a configuration error, failing closed.
test("a var that is not a string is a 500, not an unset var", async () => {
  for (const bindings of [
    { TOKEN_PATHS: ["/private"] },
    { INTERNAL_HEADERS: ["@default", "x-team-secret"] },
    { WORKSPACE_SCRUB: 7 },
    { HOST_TABLE: { hosts: [] } },
    // A string, but 0: every daemon call gave up before the daemon could answer.
    { HOST_TABLE: "daemon", DAEMON_URL: "http://127.0.0.1:9", DAEMON_SECRET: "s".repeat(24), DAEMON_TIMEOUT_MS: "0" },
  ]) {
    const w = await worker({ ORIGIN_URL: DEAD_ORIGIN, ...bindings });
    const res = await w.dispatchFetch("http://edge.test/private/report");
    await expectFailure(res, 500, "edgewise: worker misconfigured");
  }
});

test("the worker keeps serving after failures", async () => {
  const w = await worker({ ORIGIN_URL: DEAD_ORIGIN });
  const results = await Promise.all(
    Array.from({ length: 20 }, () => w.dispatchFetch("http://edge.test/").then((r) => r.status)),
  );
  assert.deepEqual(new Set(results), new Set([502]));
});
