#!/usr/bin/env bash
# The main job, end to end on this machine: set up, build, start a local origin, edgewised and the
# worker under `wrangler dev`, send requests through the worker, print what happened, and shut
# everything down (also on Ctrl-C or failure), leaving no process behind.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

bash scripts/setup.sh

log "cargo build --workspace"
cargo build --workspace --locked

run_dir="$STATE_DIR/demo"
rm -rf "$run_dir"
mkdir -p "$run_dir"
pids=()

# Each service runs in its own process group so that stopping it also stops its children
# (wrangler starts workerd).
start() {
  local name=$1
  shift
  setsid "$@" >"$run_dir/$name.log" 2>&1 &
  pids+=("$!")
  echo "$!" >"$run_dir/$name.pid"
}

stop_all() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
}
trap stop_all EXIT
trap 'exit 130' INT TERM

origin_port=$(free_port)
daemon_port=$(free_port)
memcached_port=$(free_port)
worker_port=$(free_port)
inspector_port=$(free_port)

log "origin on 127.0.0.1:$origin_port"
start origin node tests/js/support/origin.mjs --port "$origin_port" --label demo-origin
# The token cache: a real memcached when installed (setup.sh installs it), else the daemon's
# embedded store (it says so loudly in its log).
secret="demo-secret-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
daemon_args=(--listen "127.0.0.1:$daemon_port")
if command -v memcached >/dev/null 2>&1; then
  log "memcached on 127.0.0.1:$memcached_port"
  as_root=()
  [ "$(id -u)" = 0 ] && as_root=(-u root)
  start memcached memcached -l 127.0.0.1 -p "$memcached_port" -U 0 "${as_root[@]}"
  daemon_args+=(--memcached "127.0.0.1:$memcached_port")
else
  log "memcached is not installed: edgewised uses its EMBEDDED token store"
fi
log "edgewised on 127.0.0.1:$daemon_port"
start daemon env EDGEWISED_API_SECRET="$secret" target/debug/edgewised "${daemon_args[@]}"

# A test issuer (test-only key in tests/data) whose tokens the worker accepts on /private.
issuer=(target/debug/edgewise-issuer)
issuer_key=tests/data/test-issuer-key.pem
token_key=$("${issuer[@]}" key --key "$issuer_key" | node -pe 'JSON.parse(require("fs").readFileSync(0)).token_key')

log "wrangler dev on 127.0.0.1:$worker_port (builds the Wasm worker first)"
# DAEMON_SECRET is a secret in production (wrangler secret put); a var is fine for local dev.
start worker npx wrangler dev --ip 127.0.0.1 --port "$worker_port" \
  --inspector-port "$inspector_port" --show-interactive-dev-session=false \
  --var "ORIGIN_URL:http://127.0.0.1:$origin_port" \
  --var "TOKEN_PATHS:/private" --var "ISSUER_NAME:issuer.demo" --var "ISSUER_KEYS:$token_key" \
  --var "DAEMON_URL:http://127.0.0.1:$daemon_port" --var "DAEMON_SECRET:$secret"

wait_http "$origin_port" / 30 || die "origin did not start; see $run_dir/origin.log"
wait_http "$daemon_port" /healthz 30 || die "edgewised did not start; see $run_dir/daemon.log"
wait_http "$worker_port" / 600 || die "wrangler dev did not start; see $run_dir/worker.log"

printf '\n\033[1mdaemon\033[0m  GET /healthz -> %s\n' "$(curl -sS "http://127.0.0.1:$daemon_port/healthz")"

printf '\n\033[1mclient -> worker -> origin\033[0m  POST /hello/edge?from=demo\n'
printf '(with an injected internal request header, and an origin that leaks x-powered-by)\n'
curl -sS -D "$run_dir/response.headers" -o "$run_dir/response.body" \
  -X POST "http://127.0.0.1:$worker_port/hello/edge?from=demo&respond=x-powered-by%3APHP" \
  -H 'content-type: text/plain' -H 'x-demo: 1' -H 'X-Edgewise-Route: zone=injected' \
  --data 'hello through the edge'
header() { awk -F': ' -v h="$1" 'tolower($1) == h { print $2 }' "$run_dir/response.headers" | tr -d '\r'; }
status=$(awk 'NR == 1 { print $2 }' "$run_dir/response.headers")
echo "status:                     $status"
echo "served by:                  $(header x-origin-label)"
powered=$(header x-powered-by)
echo "client saw x-powered-by:    ${powered:-(stripped)}"
node -e '
  const seen = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  console.log("origin saw:                 %s %s?%s", seen.method, seen.path, seen.query);
  console.log("origin saw body:            %j", seen.body);
  console.log("origin saw x-demo:          %s", seen.headers["x-demo"]);
  console.log("origin saw x-edgewise-route: %s", seen.headers["x-edgewise-route"] ?? "(stripped)");
' "$run_dir/response.body"

printf '\n\033[1mclient -> worker -> origin\033[0m  GET /status/503 (origin errors pass through)\n'
echo "status:                     $(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$worker_port/status/503")"

[ "$status" = 200 ] || die "the request through the worker failed; logs are in $run_dir"

worker="http://127.0.0.1:$worker_port"
code() { curl -sS -o /dev/null -w '%{http_code}\n' "$@"; }
printf '\n\033[1mPrivacy Pass\033[0m  GET /private/report needs a token\n'
challenge=$(curl -sS -D - -o /dev/null "$worker/private/report" |
  awk -F'challenge="' 'tolower($0) ~ /^www-authenticate:/ { split($2, v, "\""); print v[1] }')
[ -n "$challenge" ] || die "no WWW-Authenticate challenge from the worker; see $run_dir/worker.log"
echo "without a token:            401, challenge ${challenge:0:24}..."
token=$("${issuer[@]}" token --key "$issuer_key" --challenge "$challenge")
auth="Authorization: PrivateToken token=\"$token\""
first=$(curl -sS -o "$run_dir/private.body" -w '%{http_code}' -H "$auth" "$worker/private/report")
echo "with a fresh token:         $first (origin saw authorization: $(node -pe \
  'JSON.parse(require("fs").readFileSync(process.argv[1])).headers.authorization ?? "(none)"' \
  "$run_dir/private.body"))"
echo "replaying it:               $(code -H "$auth" "$worker/private/report") (double spend refused)"
token=$("${issuer[@]}" token --key "$issuer_key" --challenge "$challenge")
auth="Authorization: PrivateToken token=\"$token\""
for _ in $(seq 20); do code -H "$auth" "$worker/private/report" >>"$run_dir/race.codes" & done
wait_codes() { for _ in $(seq 100); do [ "$(wc -l <"$run_dir/race.codes")" -ge 20 ] && return; sleep 0.1; done; }
wait_codes
echo "20 concurrent uses of one:  $(sort "$run_dir/race.codes" | uniq -c | awk '{ printf "%s x %s  ", $1, $2 }')"
echo "a forged token:             $(code -H "Authorization: PrivateToken token=\"${token:0:300}AAAA\"" "$worker/private/report")"
printf 'daemon /metrics:            '
curl -sS "http://127.0.0.1:$daemon_port/metrics" |
  awk '/^edgewise_token_redemptions_total/ { sub(/edgewise_token_redemptions_total/, ""); printf "%s ", $0 } END { print "" }'
[ "$first" = 200 ] || die "a valid token was refused; logs are in $run_dir"
printf '\nall good; logs are in %s\n' "$run_dir"
