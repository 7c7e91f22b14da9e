#!/usr/bin/env bash
# The main job, end to end on this machine: set up, build, start memcached (if installed),
# edgewised with a sample host table and feature snapshot, four labelled local origins (plus a
# dead one in the host table) and the built worker in Miniflare (the workerd that `wrangler dev`
# runs); replay a realistic traffic mix through the worker (scripts/demo/traffic.mjs), print a
# summary, and shut everything down (also on Ctrl-C or failure), leaving no process behind.
# Exits non-zero if any invariant failed.
#
# It builds only what it runs, each once: edgewised, the test issuer and the feature reader
# example natively (debug), and the worker (scripts/build-worker.sh, the profile it deploys with).
#
# Environment: EDGEWISE_DEMO_SKIP_SETUP=1 skips scripts/setup.sh (the test suite ran it);
# EDGEWISE_DEMO_MEMCACHED=0 uses the daemon's embedded token store even if memcached is installed;
# EDGEWISE_DEMO_DIR is where the run's config, data, logs and pids go (default .edgewise/demo,
# emptied first).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

demo_dir=scripts/demo
run_dir="${EDGEWISE_DEMO_DIR:-$STATE_DIR/demo}"
SECONDS=0

# --- set up and build ----------------------------------------------------------------------

if [ "${EDGEWISE_DEMO_SKIP_SETUP:-0}" != 1 ]; then
  bash scripts/setup.sh
fi
log "cargo build: edgewised, the test issuer and the read_features example"
# The packages the demo runs, nothing else (the benches crate and its peers are not built).
cargo build --locked -p edgewise-daemon -p edgewise-tests --bins -p edgewise --example read_features
log "build the Wasm worker (scripts/build-worker.sh)"
bash scripts/build-worker.sh
build_secs=$SECONDS

rm -rf "$run_dir"
mkdir -p "$run_dir"/{features,ingest}

# --- processes -----------------------------------------------------------------------------

# Each service runs in its own session and process group (setsid), so that stopping the group
# also stops its children (Miniflare starts workerd). The group ids are listed in
# $run_dir/pgids for whoever wants to check that none survived (tests/js/demo.test.mjs does).
pgids=()
declare -A pid_of
start() {
  local name=$1
  shift
  setsid "$@" >"$run_dir/$name.log" 2>&1 &
  pid_of[$name]=$!
  pgids+=("$!")
  echo "$!" >>"$run_dir/pgids"
}

# Processes still alive in our process groups.
survivors() {
  ps -e -o pid=,pgid= | awk -v groups=" ${pgids[*]} " 'index(groups, " " $2 " ") { print $1 }'
}

stop_all() {
  local status=$? pgid left
  # A second Ctrl-C must not cut the clean-up short.
  trap '' INT TERM
  trap - EXIT
  ((${#pgids[@]} > 0)) || exit "$status"
  for pgid in "${pgids[@]}"; do kill -TERM -- "-$pgid" 2>/dev/null || true; done
  # Up to 5 s for a graceful exit (edgewised drains, Miniflare stops workerd), then SIGKILL.
  for _ in $(seq 50); do
    [ -z "$(survivors)" ] && break
    sleep 0.1
  done
  for pgid in "${pgids[@]}"; do kill -KILL -- "-$pgid" 2>/dev/null || true; done
  sleep 0.2
  left=$(survivors | wc -w)
  if ((left > 0)); then
    printf 'error: %s processes of the demo survived: %s\n' "$left" "$(survivors | tr '\n' ' ')" >&2
    status=1
  else
    log "stopped ${#pgids[@]} process groups (origins, memcached, edgewised, Miniflare + workerd); none left"
  fi
  echo "logs: $run_dir"
  exit "$status"
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# The last lines of a service's log (without cargo's progress), to go with an error about it.
log_tail() {
  printf -- '--- last lines of %s:\n' "$run_dir/$1.log" >&2
  grep -av -e 'Compiling ' -e '^\[custom build\] *$' -e '^ *$' "$run_dir/$1.log" 2>/dev/null | tail -n 25 >&2 || true
  printf -- '---\n' >&2
}

# Waits until service $1 (as started by `start`) answers on port $2, path $3, for at most $4
# seconds; dies with its log if it does not. Returns 1 at once if the process is gone, so that a
# service that failed to start is not waited for until the deadline.
wait_service() {
  local name=$1 port=$2 path=$3 secs=$4 pid=${pid_of[$1]} i
  for ((i = 0; i < secs * 10; i++)); do
    curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$port$path" && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  log_tail "$name"
  die "$name did not answer on 127.0.0.1:$port within $secs s; see $run_dir/$name.log"
}

# wait_service, dying with the service's log if it exited.
need_service() {
  wait_service "$@" || { log_tail "$1"; die "$1 exited; see $run_dir/$1.log"; }
}

# free_port (lib.sh) asks the kernel for a port and releases it at once; remember the ones this
# run took ($run_dir/ports) so that no two of its services (or the dead host) get the same one.
new_port() {
  local port
  while port=$(free_port) && grep -qx "$port" "$run_dir/ports" 2>/dev/null; do :; done
  echo "$port" | tee -a "$run_dir/ports"
}

# A port held by a socket that is bound but never listens, for the dead host: connections to it
# are refused, and no process started later can take it. A port merely left free can be taken
# by one started later (workerd binds ports of its own): one CI run saw the dead host never
# fail, no retry, answers from outside its subsets and valid tokens refused, most likely that.
hold_dead_port() {
  local file="$run_dir/dead-port" _
  start dead-port perl -MSocket -e '
    socket(my $s, PF_INET, SOCK_STREAM, 0) or die "socket: $!";
    bind($s, pack_sockaddr_in(0, inet_aton("127.0.0.1"))) or die "bind: $!";
    my ($port) = unpack_sockaddr_in(getsockname($s));
    open(my $f, ">", "$ARGV[0].tmp") or die "$ARGV[0].tmp: $!";
    print $f "$port\n";
    close($f);
    rename("$ARGV[0].tmp", $ARGV[0]) or die "rename: $!";
    sleep;' "$file"
  for _ in $(seq 100); do
    [ -s "$file" ] && break
    sleep 0.05
  done
  [ -s "$file" ] || { echo "error: no port held for the dead host (see $run_dir/dead-port.log)" >&2; exit 1; }
  cat "$file" >>"$run_dir/ports"
}

# --- origins and the host table ------------------------------------------------------------

# One origin per @label@ port placeholder of the template's addresses, replaced by its port;
# "dead" gets a port nobody listens on.
origin_args=()
substitutions=()
labels=$(grep '^address = ' "$demo_dir/hosts.toml.in" | grep -o '@[a-z0-9-]*@' | tr -d @ | sort -u)
for label in $labels; do
  if [ "$label" = dead ]; then
    hold_dead_port # not in a $(subshell): `start` records the process for the clean-up
    port=$(cat "$run_dir/dead-port")
    substitutions+=(-e "s/@$label@/$port/g")
    log "dead origin: nothing listens on 127.0.0.1:$port"
    continue
  fi
  port=$(new_port)
  substitutions+=(-e "s/@$label@/$port/g")
  log "origin $label on 127.0.0.1:$port"
  start "origin-$label" node tests/js/support/origin.mjs --port "$port" --label "$label"
  origin_args+=(--origin "$label=$port")
done
sed "${substitutions[@]}" "$demo_dir/hosts.toml.in" >"$run_dir/hosts.toml"

# --- memcached and edgewised ---------------------------------------------------------------

daemon_port=$(new_port)
secret="demo-secret-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
(umask 077 && printf '%s\n' "$secret" >"$run_dir/api-secret")

memcached_servers="[]"
token_store="EMBEDDED in edgewised"
if [ "${EDGEWISE_DEMO_MEMCACHED:-1}" = 0 ]; then
  why="EDGEWISE_DEMO_MEMCACHED=0"
elif ! command -v memcached >/dev/null 2>&1; then
  why="memcached is not installed"
else
  why=""
fi
if [ -z "$why" ]; then
  memcached_port=$(new_port)
  log "memcached on 127.0.0.1:$memcached_port (the token cache)"
  as_root=()
  [ "$(id -u)" = 0 ] && as_root=(-u root)
  start memcached memcached -l 127.0.0.1 -p "$memcached_port" -U 0 "${as_root[@]}"
  memcached_servers="[\"127.0.0.1:$memcached_port\"]"
  token_store="memcached 127.0.0.1:$memcached_port"
else
  printf '\n\033[1;33m!!! %s: edgewised uses its EMBEDDED token store.\n' "$why"
  printf '!!! Tokens are spend-once within this one daemon only; production runs memcached\n'
  printf '!!! ([tokens.memcached] servers in the daemon config).\033[0m\n\n'
  token_store="EMBEDDED in edgewised ($why)"
fi

cat >"$run_dir/edgewised.toml" <<EOF
# Generated by scripts/demo.sh; every key: daemon/dist/edgewised.example.toml.
[server]
listen = "127.0.0.1:$daemon_port"
shutdown_grace_secs = 2

[api]
secret_file = "$run_dir/api-secret"

[tokens.memcached]
servers = $memcached_servers
# Above the 100 ms default: the demo counts every answer of its bursts, and a loaded 2-core
# machine stalls for 100 ms now and then (the worker's own deadline, 1 s, still bounds a spend).
timeout_ms = 500

[hosts]
file = "$run_dir/hosts.toml"
watch_interval_ms = 500

[features]
dir = "$run_dir/features"
ingest_dir = "$run_dir/ingest"
ingest_interval_ms = 200
EOF
target/debug/edgewised check-config "$run_dir/edgewised.toml" >"$run_dir/check-config.log" 2>&1 ||
  die "the generated daemon config is invalid: $(cat "$run_dir/check-config.log")"
log "edgewised on 127.0.0.1:$daemon_port (config $run_dir/edgewised.toml)"
start daemon target/debug/edgewised --config "$run_dir/edgewised.toml"

# --- the worker ----------------------------------------------------------------------------

# The test issuer (test-only key in tests/data) whose tokens the worker accepts on /private.
issuer=target/debug/edgewise-issuer
issuer_key=tests/data/test-issuer-key.pem
token_key=$("$issuer" key --key "$issuer_key" | node -pe 'JSON.parse(require("fs").readFileSync(0)).token_key')

log "worker (Miniflare on build/), its URL in $run_dir/worker.url"
# DAEMON_SECRET is a secret in production (wrangler secret put); a var is fine for local dev.
start worker node "$demo_dir/worker.mjs" --url-file "$run_dir/worker.url" \
  --var "HOST_TABLE=daemon" --var "HOST_TABLE_REFRESH_MS=1000" \
  --var "ROUTE_ATTRIBUTES=zone=header:x-edgewise-zone, stage=query:stage" \
  --var "TOKEN_PATHS=/private" --var "ISSUER_NAME=issuer.demo" --var "ISSUER_KEYS=$token_key@$(($(date +%s) + 30 * 86400))" \
  --var "DAEMON_URL=http://127.0.0.1:$daemon_port" --var "DAEMON_SECRET=$secret"

need_service daemon "$daemon_port" /healthz 30
if [ "$memcached_servers" = "[]" ]; then
  # The daemon's own warning, so nobody misses it.
  grep -m1 EMBEDDED "$run_dir/daemon.log" >&2 || true
fi

# The sample feature snapshot: written under a dot name and renamed in, as the daemon asks.
cp "$demo_dir/user_risk.csv" "$run_dir/ingest/.user_risk.csv"
mv "$run_dir/ingest/.user_risk.csv" "$run_dir/ingest/user_risk.csv"

for origin in "${origin_args[@]}"; do
  [ "$origin" = --origin ] && continue
  need_service "origin-${origin%=*}" "${origin#*=}" / 30
done

# The worker binds a port of the kernel's choosing and writes its URL once it serves.
for _ in $(seq 300); do
  [ -s "$run_dir/worker.url" ] && break
  kill -0 "${pid_of[worker]}" 2>/dev/null || { log_tail worker; die "the worker exited before serving; see $run_dir/worker.log"; }
  sleep 0.1
done
[ -s "$run_dir/worker.url" ] || { log_tail worker; die "the worker did not serve within 30 s; see $run_dir/worker.log"; }
worker_url=$(cat "$run_dir/worker.url")
up_secs=$((SECONDS - build_secs))

# --- traffic and summary -------------------------------------------------------------------

log "replaying the traffic mix through the worker at $worker_url"
status=0
node "$demo_dir/traffic.mjs" --worker "$worker_url" \
  --daemon "http://127.0.0.1:$daemon_port" --secret-file "$run_dir/api-secret" --hosts "$run_dir/hosts.toml" \
  "${origin_args[@]}" --issuer "$issuer" --issuer-key "$issuer_key" \
  --reader target/debug/examples/read_features --features-dir "$run_dir/features" \
  --table user_risk --key 42 --worker-log "$run_dir/worker.log" --token-store "$token_store" \
  --defaults shared/src/headers/defaults.rs | tee "$run_dir/summary.txt" || status=$?

printf '\nbuild and setup %d s, services up in %d s, traffic and checks %d s\n' \
  "$build_secs" "$up_secs" "$((SECONDS - build_secs - up_secs))"
((status == 0)) || die "an invariant failed (see above); logs are in $run_dir"
log "demo complete: every invariant held"
