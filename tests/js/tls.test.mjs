// The worker reaching edgewised over HTTPS with a client certificate: the built worker in
// Miniflare, the real edgewised requiring mutual TLS, a PKI generated for this run.
//
// In production the certificate comes from an `mtls_certificates` binding named DAEMON_MTLS.
// Miniflare has no such binding, so the test gives the worker the same thing workerd builds
// for one: a fetcher whose TLS presents a client key pair (and here trusts the test server CA
// instead of the public ones). Without it the worker uses the global fetch, whose TLS
// presents nothing.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startOrigin } from "./support/origin.mjs";
import { startWorker } from "./support/worker.mjs";
import { startDaemon, issuer, issuerKeyFile, testCa } from "./support/services.mjs";

const SECRET = "e2e-secret-0123456789abcdef";
let dir, pki, origin, daemon, settings;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "edgewise-tls-"));
  pki = testCa(dir);
  origin = await startOrigin({ label: "tls" });
  daemon = await startDaemon({ secret: SECRET, tls: dir, mutual: true });
  const key = JSON.parse(issuer("key", "--key", issuerKeyFile));
  settings = {
    ORIGIN_URL: origin.url,
    TOKEN_PATHS: "/private",
    ISSUER_NAME: "issuer.test",
    ISSUER_KEYS: `${key.token_key}@${Math.floor(Date.now() / 1000) + 30 * 86400}`,
    DAEMON_URL: daemon.url,
    DAEMON_SECRET: SECRET,
    DAEMON_TIMEOUT_MS: "2000",
  };
});

after(async () => {
  await daemon?.close();
  await origin?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// A fetcher to loopback whose TLS trusts the test server CA and presents `name`'s certificate.
function clientCertificate(name) {
  return {
    network: {
      allow: ["local"],
      tlsOptions: {
        keypair: { certificateChain: pki[`${name}.crt`], privateKey: pki[`${name}.key`] },
        trustedCertificates: [pki["server-ca.pem"]],
      },
    },
  };
}

// The status of a request with a fresh token, on a worker given `options` (and `vars`).
async function redeemWith(options, vars = {}) {
  const mf = await startWorker({ ...settings, ...vars }, undefined, options);
  try {
    const get = (headers = {}) => mf.dispatchFetch("http://edge.test/private/doc", { headers });
    const first = await get();
    const header = first.headers.get("www-authenticate") ?? "";
    await first.arrayBuffer();
    const challenge = header.match(/challenge="([^"]*)"/)?.[1];
    if (!challenge) return first.status;
    const token = issuer("token", "--key", issuerKeyFile, "--challenge", challenge);
    const authorization = `PrivateToken token="${token}"`;
    const spent = await get({ authorization });
    await spent.arrayBuffer();
    const replay = await get({ authorization });
    await replay.arrayBuffer();
    return [spent.status, replay.status];
  } finally {
    await mf.dispose();
  }
}

test("through the DAEMON_MTLS binding a token is spent once over mutual TLS", async () => {
  const statuses = await redeemWith({ serviceBindings: { DAEMON_MTLS: clientCertificate("client") } });
  assert.deepEqual(statuses, [200, 401]);
});

test("without a client certificate of the daemon's CA, tokens fail closed", async () => {
  // A certificate another CA issued.
  assert.deepEqual(
    await redeemWith({ serviceBindings: { DAEMON_MTLS: clientCertificate("stranger") } }),
    [503, 503],
  );
  // No binding: the global fetch, trusting the server CA but presenting no certificate.
  const outboundService = clientCertificate("client");
  delete outboundService.network.tlsOptions.keypair;
  assert.deepEqual(await redeemWith({ outboundService }), [503, 503]);
});

test("a DAEMON_MTLS binding with a plain http:// DAEMON_URL is a configuration error", async () => {
  const plain = { DAEMON_URL: "http://127.0.0.1:9" };
  // Loopback http:// alone is allowed (and nobody answers there)...
  assert.deepEqual(await redeemWith({}, plain), [503, 503]);
  // ...but a client certificate cannot travel over it.
  const binding = { serviceBindings: { DAEMON_MTLS: clientCertificate("client") } };
  assert.equal(await redeemWith(binding, plain), 500);
});
