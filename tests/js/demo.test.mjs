// The README's main command, scripts/demo.sh, end to end: it starts memcached, edgewised, four
// origins and the built worker in Miniflare, replays its traffic mix, prints the summary and
// must exit 0 (every invariant held) with none of the processes it started left running.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT } from "./support/worker.mjs";

test("scripts/demo.sh runs the traffic mix, prints the summary and leaves no process behind", { timeout: 20 * 60_000 }, () => {
  const runDir = mkdtempSync(path.join(tmpdir(), "edgewise-demo-"));
  try {
    // scripts/test.sh ran setup.sh and built everything already: the demo's builds are then
    // quick (worker-build still runs wasm-bindgen and wasm-opt).
    const run = spawnSync("bash", [path.join(ROOT, "scripts/demo.sh")], {
      cwd: ROOT,
      encoding: "utf8",
      timeout: 19 * 60_000,
      killSignal: "SIGTERM",
      env: { ...process.env, EDGEWISE_DEMO_SKIP_SETUP: "1", EDGEWISE_DEMO_DIR: runDir },
    });
    const output = `${run.stdout}\n${run.stderr}`;
    // The reason first: a report that keeps only the start of a failure showed the build's
    // progress and nothing of why.
    const tail = (text) => (text ?? "").split("\n").filter((l) => !/^\s*Compiling /.test(l)).slice(-40).join("\n");
    assert.equal(
      run.status,
      0,
      `demo.sh exited with ${run.status ?? run.signal}${run.error ? ` (${run.error.message})` : ""}\n` +
        `stderr, last lines:\n${tail(run.stderr)}\nstdout, last lines:\n${tail(run.stdout)}`,
    );

    for (const section of [
      "== requests by category and outcome",
      "== headers",
      "== routing: requests per origin",
      "== routing: requests per metadata",
      "== Privacy Pass",
      "== daemon /metrics",
      "== feature snapshot",
      "== invariants",
    ]) {
      assert.ok(run.stdout.includes(section), `no "${section}" in the output:\n${output}`);
    }
    for (const category of ["routed", "internal-headers", "origin-status", "token-missing", "token-valid", "token-forged", "token-replay", "token-race"]) {
      assert.match(run.stdout, new RegExp(`^${category} +\\d+ `, "m"), `no row for ${category}`);
    }
    for (const origin of ["eu-prod", "eu-canary", "us-prod", "ap-prod"]) {
      assert.match(run.stdout, new RegExp(`^${origin} +zone=`, "m"), `no row for origin ${origin}`);
    }
    assert.match(run.stdout, /^double spends blocked +56 +all$/m);
    assert.match(run.stdout, /^all hold: /m);
    assert.match(run.stdout, /read_features \(memory-mapped store\): +version \d+; user_risk\[42\] = \[/);

    // Nothing the demo started survives: no process in its process groups, none naming its
    // run directory (edgewised's --config) on its command line.
    const pgids = readFileSync(path.join(runDir, "pgids"), "utf8").trim().split("\n");
    assert.ok(pgids.length >= 6, `only ${pgids.length} process groups recorded`);
    const ps = execFileSync("ps", ["-e", "-o", "pid=,pgid=,args="], { encoding: "utf8" });
    const left = ps.split("\n").filter((line) => {
      const [, pgid] = line.trim().split(/\s+/);
      return pgids.includes(pgid) || line.includes(runDir);
    }).filter((line) => !line.includes(" ps -e "));
    assert.deepEqual(left, [], "processes of the demo still running");
  } finally {
    rmSync(runDir, { recursive: true, force: true });
  }
});
