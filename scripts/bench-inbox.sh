#!/usr/bin/env bash
# The inbox relay benchmark, everything on this machine in one run (release builds): PostgreSQL
# (fsync=off like the test cluster) with RECIPIENTS devices registered with relay_watch, the APNs
# sandbox (provider tokens checked), linkstr-push serving its inbox relay (INBOX_RELAY=1), and
# linkstr-load publishing gift wraps to it at RATE for SECONDS over CONNECTIONS connections, each
# wrap to the next recipient in turn. Prints the baseline (one core verifying the same wraps),
# EVENTs accepted a second, EVENT-to-OK and publish-to-APNs latency p50/p95/p99/max, where the
# CPU went, and the gateway's resident memory. Figures go to docs/performance.md by hand.
#   scripts/bench-inbox.sh
#   RECIPIENTS=100000 RATE=5000 SECONDS_=10 CONNECTIONS=4 scripts/bench-inbox.sh
#   RATE=10000 scripts/bench-inbox.sh      # past the target, to find where it saturates
#   PGSTATS=1 scripts/bench-inbox.sh       # also PostgreSQL's per-statement figures
#   PGSTATS=1 PGPLANS=1 scripts/bench-inbox.sh  # and sampled plans, node by node
#   WARMUP=0 scripts/bench-inbox.sh        # measure from a gateway that has served nothing yet
# A warm-up stream first (WARMUP seconds at RATE, default 3, to recipients the measured stream
# does not use) brings the gateway to a running service's state: its database connections open
# and their statements prepared, its APNs connection up. Its figures are printed too; from a cold
# start the first one or two seconds carry most of the tail.
# The database is first brought to a running gateway's steady state, as in bench-watch.sh
# (bench_steady_state in scripts/lib/bench.sh).
# Every setting keeps its production default but the per-connection and per-address EVENT rates
# (one load generator on one address is no abuse) and no RELAYS (nothing is watched: the pushes
# come only from the inbox).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/postgres.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh"
cd "$REPO_ROOT"
setup_all

RECIPIENTS="${RECIPIENTS:-100000}"
RATE="${RATE:-5000}"
DURATION="${SECONDS_:-10}"
CONNECTIONS="${CONNECTIONS:-4}"

bench_start bench-inbox
export MIGRATIONS_DIR="$(bench_migrations)"
APNS_DISABLE=1 "$BIN/linkstr-push" migrate >/dev/null

say "registering $RECIPIENTS recipients (SQL, one device each)"
# The inbox checks that a wrap's recipient is a valid public key: the load tool makes them.
"$BIN/linkstr-load" pubkeys --count "$RECIPIENTS" >"$WORK/pubkeys.txt"
pg_sql() { psql -q -h 127.0.0.1 -p "$PG_PORT_USED" -U linkstr linkstr "$@"; }
pg_sql -c "CREATE TABLE bench_pubkeys (pubkey text)"
pg_sql -c "\copy bench_pubkeys FROM '$WORK/pubkeys.txt'"
pg_sql -c "
    INSERT INTO devices (device_token, pubkey, apns_environment, topic, relay_watch)
    SELECT 'aa' || substr(encode(sha256(('token' || pubkey)::bytea), 'hex'), 3), pubkey, 'sandbox', 'app.linkstr.bench', true
    FROM bench_pubkeys" -c "DROP TABLE bench_pubkeys"
HISTORY="${HISTORY:-1000000}"
say "steady state: $HISTORY wraps seen over two days, ANALYZE"
bench_steady_state "$HISTORY"
# PGSTATS=1: PostgreSQL's per-statement figures, printed at the end.
if [[ "${PGSTATS:-}" == 1 ]]; then bench_pgstats_enable; fi

bench_token_sandbox sandbox
bench_gateway_env sandbox
INBOX_PORT="$(pg_free_port)"
export INBOX_RELAY=1 INBOX_LISTEN_ADDR="127.0.0.1:$INBOX_PORT" PUBLIC_URL="http://127.0.0.1:$INBOX_PORT"
export INBOX_EVENTS_PER_SECOND=100000 RELAYS=
"$BIN/linkstr-push" serve --no-migrate >"$WORK/gateway.log" 2>&1 &
GATEWAY_PID=$!
PIDS+=($GATEWAY_PID)
for _ in $(seq 1 300); do curl -sf "http://$LISTEN_ADDR/readyz" >/dev/null && break; sleep 0.1; done
curl -sf "http://$LISTEN_ADDR/readyz" >/dev/null || { tail -20 "$WORK/gateway.log" >&2; exit 1; }

# One stream: RATE wraps/s to the recipients in file $1 for $2 seconds.
load_inbox() {
    stdbuf -oL "$BIN/linkstr-load" inbox --url "ws://127.0.0.1:$INBOX_PORT/relay" --recipients "$1" --rate "$RATE" --seconds "$2" \
        --connections "$CONNECTIONS" --sandbox "https://localhost:$SANDBOX_PORT" --ca "$WORK/sandbox-ca.pem"
}

# The measured stream's recipients first, the warm-up's after them, so that no device of the
# measured stream was pushed moments before (its push would be coalesced, not sent).
WARMUP="${WARMUP:-3}"
MEASURED=$((RATE * DURATION < RECIPIENTS ? RATE * DURATION : RECIPIENTS))
head -n "$MEASURED" "$WORK/pubkeys.txt" >"$WORK/measured.txt"
if [[ "$WARMUP" -gt 0 ]]; then
    tail -n +"$((MEASURED + 1))" "$WORK/pubkeys.txt" >"$WORK/warm.txt"
    [[ -s "$WORK/warm.txt" ]] || cp "$WORK/measured.txt" "$WORK/warm.txt"
    say "warm-up: $RATE wraps/s for $WARMUP s (not measured)"
    load_inbox "$WORK/warm.txt" "$WARMUP" | grep -E "^(accepted|EVENT-to-OK|publish-to-APNs)" | sed 's/^/warm-up /'
    if [[ "${PGSTATS:-}" == 1 ]]; then bench_pgstats_reset; fi
fi

say "linkstr-load publishes $RATE wraps/s for $DURATION s to ws://127.0.0.1:$INBOX_PORT/relay over $CONNECTIONS connections"
load_inbox "$WORK/measured.txt" "$DURATION" >"$WORK/load.log" 2>&1 &
LOAD_PID=$!
bench_stream_figures
status=$LOAD_STATUS
if [[ $status -ne 0 ]]; then echo "--- gateway log (last 20 lines)"; tail -20 "$WORK/gateway.log"; fi
bench_stop_gateway || status=1
exit "$status"
