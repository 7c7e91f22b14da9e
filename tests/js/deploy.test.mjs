// `wrangler deploy --dry-run` is what an operator's deploy does minus the upload: it runs the
// [build] command from wrangler.toml and bundles the result. It must pass without credentials.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT } from "./support/worker.mjs";

test("wrangler deploy --dry-run builds and bundles the worker", () => {
  const outdir = mkdtempSync(path.join(tmpdir(), "edgewise-dry-run-"));
  try {
    const run = spawnSync(
      path.join(ROOT, "node_modules/.bin/wrangler"),
      ["deploy", "--dry-run", "--outdir", outdir],
      { cwd: ROOT, encoding: "utf8", timeout: 600_000, env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
    );
    const output = `${run.stdout}\n${run.stderr}`;
    assert.equal(run.status, 0, output);
    assert.match(output, /--dry-run: exiting now/);
    assert.match(output, /env\.ORIGIN_URL/);
    const files = readdirSync(outdir);
    assert.ok(files.includes("index.js"), files.join(", "));
    assert.ok(files.some((f) => f.endsWith("index_bg.wasm")), files.join(", "));
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
});

// Every var and secret the worker reads (its `const NAME: &str = "NAME"` names) is documented
// where operators look: wrangler.toml and the worker tables of docs/configuration.md.
test("every var the worker reads is documented in wrangler.toml and docs/configuration.md", () => {
  const sources = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith(".rs")) sources.push(readFileSync(file, "utf8"));
    }
  };
  walk(path.join(ROOT, "worker", "src"));
  const names = new Set(
    sources.flatMap((text) => [...text.matchAll(/const ([A-Z_]+): &str = "\1";/g)].map((m) => m[1])),
  );
  assert.ok(names.size >= 15, [...names].join(", "));
  const wrangler = readFileSync(path.join(ROOT, "wrangler.toml"), "utf8");
  const reference = readFileSync(path.join(ROOT, "docs", "configuration.md"), "utf8");
  for (const name of names) {
    assert.match(wrangler, new RegExp(`(^|[#\\s])${name}\\b`, "m"), `${name} missing from wrangler.toml`);
    assert.ok(reference.includes(`| \`${name}\` |`), `${name} missing from docs/configuration.md's worker tables`);
  }
});
