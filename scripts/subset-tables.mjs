#!/usr/bin/env node
// Folds the output of several `scripts/bench-subset.sh` runs into subset tables (docs/benchmarks.md):
// each cell the median of the runs (a ratio: the median of each run's ratio), native / wasm,
// then issue 4's targets with the range over the runs and how many runs met each.
//
//   for i in 1 2 3 4 5 6 7 8; do scripts/bench-subset.sh --peer-rounds 1 > run$i.txt 2>&1; done
//   node scripts/subset-tables.mjs run*.txt
import { readFileSync } from "node:fs";

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node scripts/subset-tables.mjs RUN_OUTPUT...");
  process.exit(2);
}

// A run prints the wasm tables, then "==> native", then the native ones. Each table starts at a
// header line naming its first column; its rows are the lines after it that start with a
// scenario name.
const TABLES = {
  build: /^scenario\s+hosts\s+subsets\s+build/,
  bytes: /^scenario\s+hosts\s+bodyKiB/,
  lookup: /^lookup\s+hosts\s+keys/,
  child: /^scenario\s+hosts\s+round robin/,
  update: /^update\s+hosts/,
  delta: /^scenario\s+hosts\s+changes/,
};
const ROW = /^(4x3|mosn|unique)\s/;

function parseHalf(lines) {
  const tables = {};
  let current = null;
  for (const line of lines) {
    const name = Object.keys(TABLES).find((t) => TABLES[t].test(line));
    if (name) {
      current = tables[name] = [];
    } else if (current && ROW.test(line)) {
      // The scenario's name, then numbers (ratios end in `x`, extrapolations in `*`).
      const [scenario, ...fields] = line.trim().split(/\s+/);
      current.push([scenario, ...fields.map((f) => parseFloat(f.replace(/[x*]$/, "")))]);
    } else if (current && line.trim() === "") {
      current = null;
    }
  }
  return tables;
}

function parseRun(file) {
  const lines = readFileSync(file, "utf8").split("\n");
  const split = lines.findIndex((l) => l.includes("==> native"));
  if (split < 0) throw new Error(`${file}: no native half (did the run finish?)`);
  return { wasm: parseHalf(lines.slice(0, split)), native: parseHalf(lines.slice(split)) };
}

const runs = files.map(parseRun);

// The value of column `col` in the row of `table` for (scenario, hosts[, third column]), per run.
function series(half, table, key, col) {
  return runs.map((run) => {
    const row = run[half][table]?.find((r) => key.every((k, i) => r[i] === k));
    if (!row) throw new Error(`no ${table} row ${key.join(" ")} in the ${half} output`);
    return typeof col === "function" ? col(row) : row[col];
  });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// Three significant digits, thousands grouped: 0.238, 3.63, 18.1, 1,456.
function fmt(x) {
  if (!Number.isFinite(x)) return "-";
  const digits = x >= 100 ? 0 : Math.max(0, 2 - Math.floor(Math.log10(Math.abs(x) || 1)));
  return x.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}
const ratio = (x) => `${fmt(x)}×`;

function cell(table, key, col, format = fmt) {
  return ["native", "wasm"].map((h) => format(median(series(h, table, key, col)))).join(" / ");
}

const SCENARIOS = [
  ["4x3", "4×3"],
  ["mosn", "MOSN"],
  ["unique", "unique"],
];
const HOSTS = [
  [8000, "8k"],
  [100000, "100k"],
];
const HOST_NAMES = new Map(HOSTS);

// The full scan's time over the prevalidated build's, in a row of the build table.
const scanOverPrevalidated = (r) => r[7] / r[6];

// Prints a Markdown table: its header, then a row of cells for each of `rows`; the first column
// aligned left, the rest right unless `left` says otherwise.
function table(head, rows, left = false) {
  console.log(`| ${head.join(" | ")} |`);
  console.log(`|${head.map((_, i) => (i === 0 || left ? "---" : "---:")).join("|")}|`);
  for (const cells of rows) console.log(`| ${cells.join(" | ")} |`);
}

// Each scenario at each host count, as [scenario, its name, hosts, their name].
const SCENARIO_HOSTS = SCENARIOS.flatMap(([s, name]) => HOSTS.map(([h, hname]) => [s, name, h, hname]));

function buildTable() {
  const head = ["scenario", "hosts", "body", "from the daemon's bytes, in place", "deserialize, then build", "owned table, whole", "owned, prevalidated", "MOSN's full scan", "full scan ÷ prevalidated", "retained, MiB (index alone)"];
  table(head, SCENARIO_HOSTS.map(([s, name, h, hname]) => {
    const key = [s, h];
    const nativeMedian = (t, col) => fmt(median(series("native", t, key, col)));
    // The unique full scan at 100k is extrapolated from 8k (n²), not run.
    const [about, star] = h === 100000 && s === "unique" ? ["~", "*"] : ["", ""];
    return [name, hname, `${nativeMedian("bytes", 2)} KiB`, cell("bytes", key, 4), cell("bytes", key, 3),
      cell("build", key, 3), cell("build", key, 6),
      cell("build", key, 7, (x) => `${about}${fmt(x)}${star}`),
      cell("build", key, scanOverPrevalidated, (x) => `${about}${ratio(x)}`),
      `${nativeMedian("build", 10)} (${nativeMedian("build", 11)})`];
  }));
}

function lookupTable() {
  const head = ["scenario", "hosts", "keys", "pre-interned", "raw header slices", "values, keys resolved once", "MOSN's trie (raw)", "trie ÷ raw"];
  table(head, SCENARIO_HOSTS.map(([s, name, h, hname]) => {
    const key = [s, h];
    return [name, hname, series("native", "lookup", key, 2)[0], cell("lookup", key, 3),
      cell("lookup", key, 4), cell("lookup", key, 5), cell("lookup", key, 6),
      cell("lookup", key, (r) => r[6] / r[4], ratio)];
  }));
}

const micro = (x) => fmt(x / 1000);

function updateTable() {
  const head = ["scenario", "one update (a removal or an add), µs", "health flip, µs", "the first change after a build, µs", "a canary, µs", "a build of the owned table ÷ one update"];
  table(head, SCENARIOS.map(([s, name]) => {
    const key = [s, 100000];
    return [name, cell("update", key, 2, micro), cell("update", key, 3, micro),
      cell("update", key, 5, micro), cell("update", key, 6, micro), cell("update", key, 4, ratio)];
  }));
}

function deltaTable() {
  const head = ["scenario", "hosts", "changes", "delta body", "delta, µs", "rebuild from the bytes, ms", "rebuild ÷ delta"];
  table(head, SCENARIOS.flatMap(([s, name]) => [4, 1000, 5000].map((changes) => {
    const key = [s, 100000, changes];
    return [name, HOST_NAMES.get(100000), changes.toLocaleString("en-US"),
      `${fmt(series("native", "delta", key, 3)[0])} KiB`, cell("delta", key, 4),
      cell("delta", key, 5), cell("delta", key, (r) => (r[5] * 1000) / r[4], ratio)];
  })));
  const at8k = (col) => SCENARIOS.map(([s]) => fmt(median(series("native", "delta", [s, 8000, 4], col))));
  console.log(`\nAt 8k, 4 changes: ${at8k(4).join(" / ")} µs natively against a rebuild of ${at8k(5).join(" / ")} ms.`);
}

function childTable() {
  const head = ["hosts", "round robin: even, uneven (each native / wasm)", "weighted: even, uneven", "least request: even, uneven"];
  table(head, HOSTS.map(([h, hname]) => {
    const key = ["4x3", h];
    return [hname, ...[2, 5, 8].map((c) => `${cell("child", key, c)}, ${cell("child", key, c + 1)}`)];
  }));
}

// Issue 4's targets: the range over the runs, and in how many runs each held.
function held(xs, ok) {
  const n = xs.filter(ok).length;
  return `${fmt(Math.min(...xs))}-${fmt(Math.max(...xs))} (${n} of ${xs.length})`;
}

function targetsTable() {
  const each = (half, t, col, hostsList, ok) =>
    SCENARIOS.flatMap(([s, name]) =>
      hostsList.map((h) => `${name} ${HOST_NAMES.get(h)} ${held(series(half, t, [s, h], col), ok)}`)).join("; ");
  // The full scan (an owned table's peer) over the build from bytes, per run.
  const scanOverBytes = SCENARIOS.map(([s, name]) => {
    const scan = series("native", "build", [s, 8000], 7);
    const bytes = series("native", "bytes", [s, 8000], 4);
    return `${name} ${held(scan.map((x, i) => x / bytes[i]), (x) => x >= 50)}`;
  }).join("; ");
  const le = (limit) => (x) => x <= limit;
  table(["target", "measured (k of N: runs where it held)"], [
    ["build ≤ 0.5 ms at 8k", `from the daemon's bytes: ${each("native", "bytes", 4, [8000], le(0.5))}; owned, prevalidated: ${each("native", "build", 6, [8000], le(0.5))}`],
    ["build ≤ 5 ms at 100k", `from bytes: ${each("native", "bytes", 4, [100000], le(5))}; owned, prevalidated: ${each("native", "build", 6, [100000], le(5))}`],
    ["≥ 50× the full scan at 8k", `prevalidated: ${each("native", "build", scanOverPrevalidated, [8000], (x) => x >= 50)}; from bytes: ${scanOverBytes}; wasm, prevalidated: ${each("wasm", "build", scanOverPrevalidated, [8000], (x) => x >= 50)}`],
    ["lookup ≤ 15 ns pre-interned", each("native", "lookup", 3, [8000, 100000], le(15))],
    ["≤ 25 ns in wasm, pre-interned", each("wasm", "lookup", 3, [8000, 100000], le(25))],
    ["≤ 50 ns from raw strings", `by key name: ${each("native", "lookup", 4, [8000, 100000], le(50))}; keys resolved once: ${each("native", "lookup", 5, [8000, 100000], le(50))}; wasm by key name: ${each("wasm", "lookup", 4, [8000, 100000], le(50))}`],
    ["one host update at 100k ≤ 20 µs (ns here)", `${each("native", "update", 2, [100000], le(20000))}; wasm ${each("wasm", "update", 2, [100000], le(20000))}; health flips ${each("native", "update", 3, [100000], le(20000))}`],
    ["≤ 3 MiB retained at 100k", `the index: ${each("native", "build", 11, [100000], le(3))}; with host records ${each("native", "build", 10, [100000], le(3))}`],
  ], true);
}

for (const print of [buildTable, lookupTable, updateTable, deltaTable, childTable, targetsTable]) {
  print();
  console.log();
}
