// The worker checks token signatures with the runtime's WebCrypto; the shared Rust verifier
// stays for native users. Property test: on random valid and invalid tokens, signed by Node's
// OpenSSL (a third implementation) with either salt the token type allows and some it does not,
// both verifiers give the same verdict, and the expected one. Both run in Miniflare, in the
// worker built with the `bench` feature (`scripts/build-worker.sh --bench`), whose
// /__edgewise/bench/verify answers both verdicts for the request's token.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash, generateKeyPairSync, sign, constants } from "node:crypto";
import path from "node:path";
import { ROOT, startWorker } from "./support/worker.mjs";

const CASES = 400;
const SEED = 0x9578;
let mf, trusted, foreign, challenge, keyId;

const sha256 = (bytes) => createHash("sha256").update(bytes).digest();
const rsaKey = () => generateKeyPairSync("rsa", { modulusLength: 2048, publicExponent: 65537 });

before(async () => {
  [trusted, foreign] = [rsaKey(), rsaKey()];
  const spki = trusted.publicKey.export({ type: "spki", format: "der" });
  const expiry = Math.floor(Date.now() / 1000) + 86400;
  mf = await startWorker(
    {
      ORIGIN_URL: "http://127.0.0.1:9",
      TOKEN_PATHS: "/private",
      ISSUER_NAME: "issuer.test",
      ISSUER_KEYS: `${spki.toString("base64url")}@${expiry}`,
      DAEMON_URL: "http://127.0.0.1:9",
      DAEMON_SECRET: "unused-0123456789abcdef",
    },
    path.join(ROOT, ".edgewise/build-bench"),
  );
  const res = await mf.dispatchFetch("http://edge.test/private");
  await res.arrayBuffer();
  const header = res.headers.get("www-authenticate") ?? "";
  const param = (name) => Buffer.from(header.match(new RegExp(`${name}="([^"]*)"`))[1], "base64url");
  challenge = param("challenge");
  keyId = sha256(param("token-key"));
});

after(async () => {
  await mf?.dispose();
});

// mulberry32: the same cases on every run.
function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// One random token and whether it must verify.
function randomCase(random) {
  const pick = (items) => items[Math.floor(random() * items.length)];
  const bytes = (n) => Buffer.from(Array.from({ length: n }, () => Math.floor(random() * 256)));
  const salt = pick([48, 48, 0, 0, 32, 47, 1]);
  const signer = random() < 0.9 ? trusted : foreign;
  const input = Buffer.concat([Buffer.from([0, 2]), bytes(32), sha256(challenge), keyId]);
  const signature = sign("sha384", input, {
    key: signer.privateKey,
    padding: constants.RSA_PKCS1_PSS_PADDING,
    saltLength: salt,
  });
  let token = Buffer.concat([input, signature]);
  const mutation = pick(["none", "none", "none", "bit", "signature bit", "random signature", "ones"]);
  if (mutation === "bit" || mutation === "signature bit") {
    const from = mutation === "bit" ? 0 : input.length;
    const at = from + Math.floor(random() * (token.length - from));
    token[at] ^= 1 << Math.floor(random() * 8);
  } else if (mutation === "random signature") {
    token = Buffer.concat([input, bytes(256)]);
  } else if (mutation === "ones") {
    // At or above any modulus: no signature at all.
    token = Buffer.concat([input, Buffer.alloc(256, 0xff)]);
  }
  const valid = (salt === 48 || salt === 0) && signer === trusted && mutation === "none";
  return { token, valid, what: `salt ${salt}, ${signer === trusted ? "trusted" : "foreign"} key, ${mutation}` };
}

test(`WebCrypto and the Rust verifier agree on ${CASES} random tokens`, async () => {
  const random = rng(SEED);
  const seen = new Map();
  for (let i = 0; i < CASES; i++) {
    const { token, valid, what } = randomCase(random);
    const res = await mf.dispatchFetch("http://edge.test/__edgewise/bench/verify", {
      headers: { authorization: `PrivateToken token="${token.toString("base64url")}"` },
    });
    assert.equal(res.status, 200, `case ${i} (${what})`);
    const { rust, webcrypto } = await res.json();
    assert.equal(webcrypto, rust, `case ${i} (${what}): the verifiers disagree`);
    assert.equal(rust === "valid", valid, `case ${i} (${what}): ${rust}`);
    seen.set(rust, (seen.get(rust) ?? 0) + 1);
  }
  // The cases reach each verdict the token type has: valid, a bad signature, and the checks
  // made before it.
  for (const verdict of ["valid", "token signature does not verify"]) {
    assert.ok(seen.get(verdict) > 20, `${verdict}: ${JSON.stringify([...seen])}`);
  }
  assert.ok(seen.size >= 4, `verdicts seen: ${JSON.stringify([...seen])}`);
});

test("a token of either salt verifies after one of the other (the salt tried first flips)", async () => {
  const input = Buffer.concat([Buffer.from([0, 2]), Buffer.alloc(32, 7), sha256(challenge), keyId]);
  for (const salt of [0, 48, 48, 0, 0, 48]) {
    const signature = sign("sha384", input, {
      key: trusted.privateKey,
      padding: constants.RSA_PKCS1_PSS_PADDING,
      saltLength: salt,
    });
    const token = Buffer.concat([input, signature]).toString("base64url");
    const res = await mf.dispatchFetch("http://edge.test/__edgewise/bench/verify", {
      headers: { authorization: `PrivateToken token="${token}"` },
    });
    assert.deepEqual(await res.json(), { rust: "valid", webcrypto: "valid" }, `salt ${salt}`);
  }
});
