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
worker_port=$(free_port)
inspector_port=$(free_port)

log "origin on 127.0.0.1:$origin_port"
start origin node tests/js/support/origin.mjs --port "$origin_port" --label demo-origin
log "edgewised on 127.0.0.1:$daemon_port"
start daemon target/debug/edgewised --listen "127.0.0.1:$daemon_port"
log "wrangler dev on 127.0.0.1:$worker_port (builds the Wasm worker first)"
start worker npx wrangler dev --ip 127.0.0.1 --port "$worker_port" \
  --inspector-port "$inspector_port" --show-interactive-dev-session=false \
  --var "ORIGIN_URL:http://127.0.0.1:$origin_port"

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
printf '\nall good; logs are in %s\n' "$run_dir"
