// Waiting for something the system does on its own time (a reload, a reconnect).

import assert from "node:assert/strict";

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Calls `check` until it resolves true, `every` ms apart, at most `tries` times and for at most
// `within` ms; otherwise fails the test saying that `what` never happened.
export async function eventually(check, { what, every, tries = Infinity, within = Infinity }) {
  const deadline = Date.now() + within;
  for (let i = 0; i < tries && Date.now() < deadline; i++) {
    if (await check()) return;
    await sleep(every);
  }
  assert.fail(`${what}: not seen`);
}
