// The real native services the end-to-end tests run beside the worker: memcached (Debian's
// package), edgewised and the test issuer, both as `cargo build --workspace` left them
// (scripts/test.sh builds them first). Every process is stopped by pid in `close()`.

import { spawn, execFileSync } from "node:child_process";
import { createServer, connect } from "node:net";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { ROOT } from "./worker.mjs";

const bin = (name, env) => process.env[env] ?? path.join(ROOT, "target", "debug", name);

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// Waits until `child` answers on `port` as itself (`isChild(port, child)`): the port was free
// when picked, and a listener started since (workerd binds ports of its own) would accept the
// connection while the child fails to bind and exits.
async function waitForPort(port, child, what, isChild) {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}`);
    if (await isChild(port, child).catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`${what} did not answer on ${port}`);
}

// Whether memcached on `port` is `child`: its `STAT pid`.
function memcachedIs(port, child) {
  return new Promise((resolve) => {
    let reply = "";
    const socket = connect(port, "127.0.0.1", () => socket.write("stats\r\n"));
    socket.setTimeout(1000, () => { socket.destroy(); resolve(false); });
    socket.on("data", (chunk) => {
      reply += chunk;
      if (!reply.endsWith("END\r\n")) return;
      socket.destroy();
      resolve(reply.includes(`STAT pid ${child.pid}\r\n`));
    });
    socket.once("error", () => resolve(false));
    // Closed without its END (another listener answering something else): not memcached.
    socket.once("close", () => resolve(false));
  });
}

// Follows `child`'s JSON log on stderr; `listening()` is whether it logged listening on `port`
// (any other edgewised, of a test file run beside this one, logs to its own stderr).
function listeningLog(child, port) {
  let partial = "";
  let listening = false;
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk) => {
    const lines = (partial + chunk).split("\n");
    partial = lines.pop();
    listening ||= lines.some((l) => l.includes('"message":"listening"') && l.includes(`"addr":"127.0.0.1:${port}"`));
  });
  return () => listening;
}

function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once("exit", resolve);
    child.kill("SIGKILL");
  });
}

// memcached on a free loopback port; `restart()` brings up an empty one on the same port.
export async function startMemcached(args = []) {
  const port = await freePort();
  const exe = ["/usr/bin/memcached", "/usr/local/bin/memcached"].find(existsSync);
  if (!exe) throw new Error("memcached is not installed: run scripts/setup.sh");
  const root = process.getuid?.() === 0 ? ["-u", "root"] : [];
  let child;
  const launch = async () => {
    child = spawn(exe, ["-l", "127.0.0.1", "-p", String(port), "-U", "0", ...root, ...args], { stdio: "ignore" });
    await waitForPort(port, child, "memcached", memcachedIs);
  };
  await launch();
  return {
    addr: `127.0.0.1:${port}`,
    kill: () => stop(child),
    restart: async () => { await stop(child); await launch(); },
    close: () => stop(child),
  };
}

// edgewised with its API secret, backed by `memcached` (an address) or its embedded store;
// `args` go to its command line as they are (e.g. ["--config", file]). `tls`, a directory
// `testCa()` wrote, serves HTTPS with its server certificate, and with `mutual` asks clients
// for a certificate of its client CA.
export async function startDaemon({ secret, memcached, args: extra = [], tls, mutual = false } = {}) {
  const port = await freePort();
  const args = ["--listen", `127.0.0.1:${port}`, "--log-format", "json", ...extra];
  if (tls) {
    const set = (key, file) => args.push("--set", `server.tls.${key}=${JSON.stringify(path.join(tls, file))}`);
    set("cert_file", "server.crt");
    set("key_file", "server.key");
    if (mutual) set("client_ca_file", "client-ca.pem");
  }
  // 400 ms, not the default 100, for spends to answer: a loaded 2-core CI VM stalls that long
  // now and then, and the tests count every answer. Below the workers' own deadline (500 ms
  // in these tests), so that the daemon gives its verdict before the worker gives up.
  if (memcached) args.push("--memcached", memcached, "--set", "tokens.memcached.timeout_ms=400");
  const env = { ...process.env, EDGEWISED_API_SECRET: secret, NO_COLOR: "1" };
  let child;
  const launch = async () => {
    child = spawn(bin("edgewised", "EDGEWISED_BIN"), args, { env, stdio: ["ignore", "ignore", "pipe"] });
    const listening = listeningLog(child, port);
    await waitForPort(port, child, "edgewised", async () => listening());
  };
  await launch();
  return {
    url: `${tls ? "https" : "http"}://127.0.0.1:${port}`,
    signal: (name) => child.kill(name),
    kill: () => stop(child),
    restart: async () => { await stop(child); await launch(); },
    close: () => stop(child),
  };
}

// A throwaway PKI in `dir` (tests/src/bin/edgewise-test-ca.rs): server-ca.pem, server.crt/key,
// client-ca.pem, client.crt/key, and stranger.crt/key of another CA. Returns the PEMs by name.
export function testCa(dir) {
  execFileSync(bin("edgewise-test-ca", "EDGEWISE_TEST_CA_BIN"), [dir]);
  const read = (name) => readFileSync(path.join(dir, name), "utf8");
  return Object.fromEntries(
    ["server-ca.pem", "client.crt", "client.key", "stranger.crt", "stranger.key"].map((n) => [n, read(n)]),
  );
}

// The test issuer (tests/src/bin/edgewise-issuer.rs) with the committed test-only key.
export const issuerKeyFile = path.join(ROOT, "tests", "data", "test-issuer-key.pem");

export function issuer(...args) {
  return execFileSync(bin("edgewise-issuer", "EDGEWISE_ISSUER_BIN"), args, { encoding: "utf8" }).trim();
}
