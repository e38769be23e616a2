#!/usr/bin/env bash
# What an idle instance costs the machine: PostgreSQL, the APNs sandbox and linkstr-push with
# nothing to do (no relay watched, no request), release builds. Over IDLE_SECONDS (default 30) it
# measures PostgreSQL alone first, the baseline, and then with the gateway running: an idle
# gateway's work is its delivery loops' polls of the queue and its timers. Prints each one's CPU
# in milliseconds a second; PGSTATS=1 adds PostgreSQL's statements over the second window.
# Figures go to docs/performance.md by hand.
#   scripts/bench-idle.sh
#   IDLE_SECONDS=60 PGSTATS=1 scripts/bench-idle.sh
#   scripts/bench-compare.sh idle DIR_A DIR_B   # two builds alternated
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/postgres.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh"
cd "$REPO_ROOT"
setup_all

IDLE="${IDLE_SECONDS:-30}"
[[ "$IDLE" =~ ^[1-9][0-9]*$ ]] || { echo "IDLE_SECONDS must be a positive integer" >&2; exit 2; }

bench_start bench-idle
export MIGRATIONS_DIR="$(bench_migrations)"
APNS_DISABLE=1 "$BIN/linkstr-push" migrate >/dev/null
if [[ "${PGSTATS:-}" == 1 ]]; then bench_pgstats_enable; fi
bench_token_sandbox sandbox

# ms a second from the last closed window's seconds for NAME.
per_second() { awk -v s="${CPU_WINDOW_USED[$1]}" -v w="$CPU_WINDOW_SECONDS" 'BEGIN { printf "%.1f", s * 1000 / w }'; }

say "PostgreSQL alone for $IDLE s (the baseline)"
cpu_window_start "postgres=pg:$WORK/pg"
sleep "$IDLE"
cpu_window_close "PostgreSQL alone"
alone="$(per_second postgres)"

bench_gateway_env sandbox
"$BIN/linkstr-push" serve --no-migrate >"$WORK/gateway.log" 2>&1 &
GATEWAY_PID=$!
PIDS+=($GATEWAY_PID)
for _ in $(seq 1 100); do curl -sf "http://$LISTEN_ADDR/healthz" >/dev/null && break; sleep 0.1; done
curl -sf "http://$LISTEN_ADDR/healthz" >/dev/null || { echo "the gateway did not come up"; tail -20 "$WORK/gateway.log"; exit 1; }
# Its start-up (connections opened, statements prepared) is not idling.
sleep 3
if [[ "${PGSTATS:-}" == 1 ]]; then bench_pgstats_reset; fi
say "the gateway idle for $IDLE s"
cpu_window_start "gateway=$GATEWAY_PID postgres=pg:$WORK/pg"
sleep "$IDLE"
cpu_window_close "idle"
echo "$CPU_WINDOW_LINE"
echo "idle CPU (ms a second): gateway $(per_second gateway) postgres $(per_second postgres); PostgreSQL alone before the gateway started: $alone"
if [[ "${PGSTATS:-}" == 1 ]]; then bench_pgstats_print; fi
bench_stop_gateway
