// Tokens from an implementation this project did not write: Cloudflare's
// @cloudflare/privacypass-ts 0.8.1 as client and issuer, in both token type 0x0002 modes
// (RSABSSA-SHA384-PSS and -PSSZERO), through the built worker in Miniflare, the real edgewised
// and a real memcached.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { TokenChallenge, publicVerif } from "@cloudflare/privacypass-ts";
import { startOrigin } from "./support/origin.mjs";
import { startWorker } from "./support/worker.mjs";
import { startMemcached, startDaemon } from "./support/services.mjs";

const SECRET = "e2e-secret-0123456789abcdef";
const { BlindRSAMode, Client, Issuer, getPublicKeyBytes } = publicVerif;
let origin, memcached, daemon;

before(async () => {
  origin = await startOrigin({ label: "interop" });
  memcached = await startMemcached();
  daemon = await startDaemon({ secret: SECRET, memcached: memcached.addr });
});

after(async () => {
  await daemon?.close();
  await memcached?.close();
  await origin?.close();
});

const b64url = (bytes) => Buffer.from(bytes).toString("base64url");

// An issuer of `mode` with a fresh key, and a worker that trusts that key.
async function setUp(mode) {
  const keys = await Issuer.generateKey(mode, {
    modulusLength: 2048,
    publicExponent: Uint8Array.from([1, 0, 1]),
  });
  const issuer = new Issuer(mode, "issuer.test", keys.privateKey, keys.publicKey);
  const publicKey = await getPublicKeyBytes(keys.publicKey);
  const expiry = Math.floor(Date.now() / 1000) + 30 * 86400;
  const mf = await startWorker({
    ORIGIN_URL: origin.url,
    TOKEN_PATHS: "/private",
    ISSUER_NAME: "issuer.test",
    ISSUER_KEYS: `${b64url(publicKey)}@${expiry}`,
    DAEMON_URL: daemon.url,
    DAEMON_SECRET: SECRET,
    DAEMON_TIMEOUT_MS: "2000",
  });
  return { issuer, publicKey, mf };
}

// A token for the challenge the worker hands out, made by privacypass-ts's client and issuer.
async function tokenFor(mf, mode, issuer, publicKey) {
  const res = await mf.dispatchFetch("http://edge.test/private/doc");
  assert.equal(res.status, 401);
  await res.arrayBuffer();
  const header = res.headers.get("www-authenticate") ?? "";
  // A Uint8Array of its own: privacypass-ts reads through `bytes.buffer` from offset 0, and a
  // small Buffer is a view into Node's shared pool.
  const challenge = TokenChallenge.deserialize(
    new Uint8Array(Buffer.from(header.match(/challenge="([^"]*)"/)[1], "base64url")),
  );
  assert.equal(challenge.issuerName, "issuer.test");
  const client = new Client(mode);
  const request = await client.createTokenRequest(challenge, publicKey);
  const token = await client.finalize(await issuer.issue(request));
  assert.ok(await issuer.verify(token), "privacypass-ts verifies its own token");
  return b64url(token.serialize());
}

for (const [name, mode] of [
  ["PSS (salt 48)", BlindRSAMode.PSS],
  ["PSSZERO (no salt)", BlindRSAMode.PSSZero],
]) {
  test(`privacypass-ts ${name} tokens pass once`, async () => {
    const { issuer, publicKey, mf } = await setUp(mode);
    try {
      const token = await tokenFor(mf, mode, issuer, publicKey);
      const authorization = `PrivateToken token="${token}"`;
      const spent = await mf.dispatchFetch("http://edge.test/private/doc", { headers: { authorization } });
      assert.equal(spent.status, 200, await spent.clone().text());
      assert.equal((await spent.json()).headers.authorization, undefined, "token leaked to the origin");
      const replay = await mf.dispatchFetch("http://edge.test/private/doc", { headers: { authorization } });
      assert.equal(replay.status, 401);
      assert.equal(await replay.text(), "edgewise: token already spent");
    } finally {
      await mf.dispose();
    }
  });
}
