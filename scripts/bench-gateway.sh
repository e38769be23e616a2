#!/usr/bin/env bash
# The gateway benchmark, everything on this machine in one run (release builds):
#   1. the APNs sandbox's own capacity, with h2load (the ceiling for pushes/s);
#   2. the registration SQL alone, with pgbench (the ceiling for registrations/s);
#   3. linkstr-load against linkstr-push: registrations/s, then pushes/s to the sandbox and the
#      p50/p99 enqueue-to-APNs latency;
#   4. the same pushes to FCM and to Web Push devices, through the sandbox's other faces.
# PostgreSQL runs with fsync=off like the test cluster. Figures go to docs/performance.md by hand.
#   scripts/bench-gateway.sh
#   REGISTRATIONS=40000 PUSHES=200 scripts/bench-gateway.sh
#   PGSTATS=1 scripts/bench-gateway.sh   # also PostgreSQL's per-statement figures for each phase
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/postgres.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh"
cd "$REPO_ROOT"
APT_PACKAGES+=(nghttp2-client)  # h2load
setup_all

REGISTRATIONS="${REGISTRATIONS:-20000}"
# Production defaults stay on, PUSH_DEVICE_BUDGET (10 alerts a minute per device) included: the
# pushes go round-robin over DEVICES, so 100 pushes x 500 recipients over 10,000 devices is 5
# alerts a device, and the budget does not bind.
DEVICES="${DEVICES:-10000}"
PUSHES="${PUSHES:-100}"
RECIPIENTS="${RECIPIENTS:-500}"
# SMOKE=1 (scripts/test.sh's full run): the same steps, the two ceilings measured briefly.
H2LOAD_REQUESTS=100000 PGBENCH_SECONDS=10
[[ "${SMOKE:-}" == 1 ]] && H2LOAD_REQUESTS=2000 PGBENCH_SECONDS=2

bench_start bench

say "1. APNs sandbox capacity (h2load: 2 connections x 100 streams, $H2LOAD_REQUESTS pushes, no provider-token check)"
bench_sandbox baseline
echo '{"aps":{"alert":{"title":"New post in linkstr","body":"Open linkstr to view"},"sound":"default","thread-id":"C1"},"type":"new_post","event_id":"e","conversation_id":"C1"}' > "$WORK/payload.json"
# The sandbox's own CPU over the run: the test overhead a push costs the machine in the phases below.
SANDBOX_CPU_BEFORE="$(cpu_seconds "${PIDS[-1]}")" H2LOAD_STARTED=$EPOCHREALTIME
h2load -n "$H2LOAD_REQUESTS" -c 2 -m 100 -d "$WORK/payload.json" -H 'apns-topic: app.linkstr.bench' -H 'apns-push-type: alert' -H 'apns-priority: 10' \
    "https://127.0.0.1:$SANDBOX_PORT/3/device/$(printf 'ab%.0s' {1..32})" | grep -E "finished in|requests:|status codes"
# (Under a second, as in the test command's smoke run, /proc's 10 ms ticks would be most of it.)
awk -v before="$SANDBOX_CPU_BEFORE" -v after="$(cpu_seconds "${PIDS[-1]}")" -v n="$H2LOAD_REQUESTS" \
    -v seconds="$(awk -v a="$H2LOAD_STARTED" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')" 'BEGIN {
        if (seconds < 1) { printf "CPU per request under h2load: not measured (a %.2f s window)\n", seconds; exit }
        printf "CPU per request under h2load (µs; %d requests): sandbox %.1f\n", n, (after - before) * 1e6 / n }'
kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true; unset 'PIDS[-1]'

say "2. registration SQL alone (pgbench, prepared, 32 clients, $PGBENCH_SECONDS s)"
export MIGRATIONS_DIR="$(bench_migrations)"
APNS_DISABLE=1 "$BIN/linkstr-push" migrate >/dev/null
if [[ "${PGSTATS:-}" == 1 ]]; then bench_pgstats_enable; fi
/usr/lib/postgresql/*/bin/pgbench -h 127.0.0.1 -p "$PG_PORT_USED" -U linkstr -n -M prepared -c 32 -j 2 -T "$PGBENCH_SECONDS" -f scripts/bench/register.pgbench linkstr \
    | grep -E "^tps|latency average"

say "3. linkstr-push against the sandbox (provider tokens checked)"
bench_token_sandbox gateway
bench_gateway_env gateway
bench_transports_env gateway
"$BIN/linkstr-push" serve --no-migrate >"$WORK/gateway.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do curl -sf "http://$LISTEN_ADDR/readyz" >/dev/null && break; sleep 0.1; done
# Where the CPU goes in each phase: everything shares these cores.
PROCESSES="gateway=${PIDS[-1]} sandbox=${PIDS[-2]} postgres=pg:$WORK/pg"
# PGSTATS=1: each phase's statements, counted from the phase's start.
pgstats_phase() { if [[ "${PGSTATS:-}" == 1 ]]; then "bench_pgstats_$1"; fi; }
pgstats_phase reset
cpu_split registrations "$PROCESSES" "$BIN/linkstr-load" registrations --url "http://$LISTEN_ADDR" --count "$REGISTRATIONS" --keys 2000 --concurrency 32
cpu_per_operation "$REGISTRATIONS" registration
pgstats_phase print
pgstats_phase reset
cpu_between pushes "$PROCESSES" pushing "notifications delivered" "$BIN/linkstr-load" pushes --url "http://$LISTEN_ADDR" --sandbox "https://localhost:$SANDBOX_PORT" --ca "$APNS_CA_FILE" \
    --devices "$DEVICES" --recipients "$RECIPIENTS" --pushes "$PUSHES" --concurrency 8
cpu_per_operation $((PUSHES * RECIPIENTS)) push
pgstats_phase print

say "4. the same pushes to each other transport (FCM: OAuth token exchanged and checked; Web Push: each message encrypted, signed, and decrypted by the sandbox)"
for platform in fcm webpush; do
    cpu_between "pushes-$platform" "$PROCESSES" pushing "notifications delivered" "$BIN/linkstr-load" pushes --platform "$platform" --url "http://$LISTEN_ADDR" \
        --sandbox "https://localhost:$SANDBOX_PORT" --ca "$APNS_CA_FILE" --devices "$DEVICES" --recipients "$RECIPIENTS" --pushes "$PUSHES" --concurrency 8
    cpu_per_operation $((PUSHES * RECIPIENTS)) push
done
