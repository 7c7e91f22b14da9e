// Internal headers never reach the origin (request) or the client (response); everything else
// passes unchanged. The built worker in Miniflare against a real local origin.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startOrigin } from "./support/origin.mjs";
import { startWorker } from "./support/worker.mjs";

let origin;
const workers = [];

before(async () => {
  origin = await startOrigin({ label: "strip" });
});

after(async () => {
  await Promise.all(workers.map((w) => w.dispose()));
  await origin?.close();
});

async function worker(bindings = {}) {
  const w = await startWorker({ ORIGIN_URL: origin.url, ...bindings });
  workers.push(w);
  return w;
}

// Names as the origin received them (lower-cased for comparison).
const receivedNames = (seen) =>
  seen.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());

const internalRequest = [
  ["X-Edgewise-Route", "zone=a"],
  ["x-envoy-retry-on", "5xx"],
  ["X-MIDDLEWARE-SUBREQUEST", "middleware"],
  ["x-forwarded-user", "admin"],
  ["L5d-Dst-Override", "evil.svc"],
  // `_` for `-`: one name to the CGI-style origins that read HTTP_X_REMOTE_USER.
  ["X-Remote_User", "admin"],
  ["x_edgewise_zone", "a"],
];
const ordinary = [
  ["accept", "application/json"],
  ["X-CuStOm-Thing", "kept"],
  ["x-forwarded-for", "203.0.113.7"],
  ["x-repeat", "1"],
  ["x-repeat", "2"],
  ["cookie", "session=abc"],
  ["x-edgewise", "not-a-prefix-match"],
];

test("default list: internal request headers never reach the origin, others pass unchanged", async () => {
  const w = await worker();
  const res = await w.dispatchFetch("http://edge.test/echo", { headers: [...internalRequest, ...ordinary] });
  assert.equal(res.status, 200);
  const seen = await res.json();
  const names = receivedNames(seen);
  for (const [name] of internalRequest) assert.ok(!names.includes(name.toLowerCase()), `${name} leaked`);
  assert.equal(seen.headers.accept, "application/json");
  assert.equal(seen.headers["x-custom-thing"], "kept");
  assert.equal(seen.headers["x-forwarded-for"], "203.0.113.7");
  assert.equal(seen.headers["x-repeat"], "1, 2");
  assert.equal(seen.headers.cookie, "session=abc");
  assert.equal(seen.headers["x-edgewise"], "not-a-prefix-match");
});

test("default list: internal response headers never reach the client, others pass unchanged", async () => {
  const w = await worker();
  const respond = [
    "X-Powered-By:Express",
    "x-accel-redirect:/protected/file",
    "X-Edgewise-Debug:subset=a",
    "X-Envoy-Upstream-Service-Time:12",
    "Cache-Control:max-age=60",
    "X-Odd-CASE:yes",
  ];
  const query = respond.map((r) => `respond=${encodeURIComponent(r)}`).join("&");
  const res = await w.dispatchFetch(`http://edge.test/echo?${query}`);
  assert.equal(res.status, 200);
  for (const name of ["x-powered-by", "x-accel-redirect", "x-edgewise-debug", "x-envoy-upstream-service-time"]) {
    assert.equal(res.headers.get(name), null, `${name} leaked`);
  }
  assert.equal(res.headers.get("cache-control"), "max-age=60");
  assert.equal(res.headers.get("x-odd-case"), "yes");
  assert.equal(res.headers.get("content-type"), "application/json");
  assert.deepEqual(res.headers.getSetCookie(), ["a=1; Path=/", "b=2; Path=/"]);
  const seen = await res.json();
  assert.equal(seen.path, "/echo");
});

test("a stripped response keeps its status and streamed body", async () => {
  const w = await worker({ INTERNAL_RESPONSE_HEADERS: "x-origin-label" });
  const res = await w.dispatchFetch("http://edge.test/bytes/1000000");
  assert.equal(res.headers.get("x-origin-label"), null);
  assert.equal((await res.arrayBuffer()).byteLength, 1000000);
  const notFound = await w.dispatchFetch("http://edge.test/status/404");
  assert.equal(notFound.status, 404);
  assert.equal(notFound.headers.get("x-origin-label"), null);
  assert.equal(await notFound.text(), "status 404");
});

test("configured lists extend or replace the defaults", async () => {
  const extended = await worker({ INTERNAL_HEADERS: "@default, x-team-*  X-Secret" });
  let seen = await (
    await extended.dispatchFetch("http://edge.test/", {
      headers: { "x-team-a": "1", "x-secret": "2", "x-edgewise-route": "3", "x-kept": "4" },
    })
  ).json();
  let names = receivedNames(seen);
  for (const gone of ["x-team-a", "x-secret", "x-edgewise-route"]) assert.ok(!names.includes(gone), gone);
  assert.ok(names.includes("x-kept"));

  const replaced = await worker({ INTERNAL_HEADERS: "x-only" });
  seen = await (
    await replaced.dispatchFetch("http://edge.test/", { headers: { "x-only": "1", "x-edgewise-route": "2" } })
  ).json();
  names = receivedNames(seen);
  assert.ok(!names.includes("x-only"));
  assert.ok(names.includes("x-edgewise-route"));
});

test("empty lists strip nothing", async () => {
  const w = await worker({ INTERNAL_HEADERS: "", INTERNAL_RESPONSE_HEADERS: "" });
  const res = await w.dispatchFetch("http://edge.test/echo?respond=x-powered-by%3Aphp", {
    headers: internalRequest,
  });
  assert.equal(res.headers.get("x-powered-by"), "php");
  const names = receivedNames(await res.json());
  for (const [name] of internalRequest) assert.ok(names.includes(name.toLowerCase()), name);
});

test("an invalid list makes the worker answer 500, never crash", async () => {
  for (const bindings of [{ INTERNAL_HEADERS: "x-ok, bad name;" }, { INTERNAL_RESPONSE_HEADERS: "*" }]) {
    const w = await worker(bindings);
    for (let i = 0; i < 2; i++) {
      const res = await w.dispatchFetch("http://edge.test/");
      assert.equal(res.status, 500);
      assert.equal(await res.text(), "edgewise: worker misconfigured");
    }
  }
});

test("header names beyond the request workspace get a clean 431, not a crash", async () => {
  const w = await worker();
  const many = Array.from({ length: 2500 }, (_, i) => [`x-filler-header-number-${String(i).padStart(6, "0")}`, "1"]);
  const res = await w.dispatchFetch("http://edge.test/echo", { headers: many });
  assert.equal(res.status, 431);
  assert.equal(await res.text(), "edgewise: request headers too large");
  // The isolate keeps serving, with a scrubbed workspace.
  const ok = await w.dispatchFetch("http://edge.test/echo", { headers: [["x-edgewise-route", "z"]] });
  assert.equal(ok.status, 200);
  assert.equal((await ok.json()).headers["x-edgewise-route"], undefined);
});
