// CPU time of the workerd processes Miniflare starts, read from /proc (Linux): workerd keeps no
// per-request CPU account locally, so benchmarks read the process's between batches.

import { readFileSync, readdirSync } from "node:fs";

export const TICKS_PER_SECOND = 100; // USER_HZ on Linux

// /proc/PID/stat: the command name in parentheses, then the fields after it (state, ppid, ...).
function procStat(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const close = stat.lastIndexOf(")");
  return { comm: stat.slice(stat.indexOf("(") + 1, close), fields: stat.slice(close + 2).split(" ") };
}

// The workerd processes this Node process started.
export function childWorkerds() {
  const pids = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const { comm, fields } = procStat(entry);
      if (comm === "workerd" && Number(fields[1]) === process.pid) pids.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}

// User plus system CPU seconds of `pid`, all threads.
export function cpuSeconds(pid) {
  const { fields } = procStat(pid);
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

// Starts Miniflare with `start()` and returns it with the pid of the workerd it started.
export async function withPid(start) {
  const before = new Set(childWorkerds());
  const mf = await start();
  const pid = childWorkerds().find((p) => !before.has(p));
  if (pid === undefined) throw new Error("no workerd process found for the new Miniflare");
  return { mf, pid };
}
