#!/usr/bin/env bash
# Instructions per push on the gateway's APNs send path, under valgrind's callgrind: repeatable
# where wall-clock figures on this shared 2-core machine swing from one minute to the next. A
# release build of send-path-counts sends relay-watch alerts, a batch at a time, through the
# gateway's APNs sender to the sandbox (provider tokens checked), which runs natively in its own
# process; the figure is (count of a run that sends PUSHES pushes − count of one that builds the
# same pushes and does not send them) / PUSHES, both runs with the same warm-up. It counts the
# gateway's side of a push: the request built, HTTP/2 frames and HPACK, TLS, the answer read. Not
# the queue, not PostgreSQL.
#   scripts/bench-send-instructions.sh               # 2,000 pushes in batches of 100
#   PUSHES=4000 BATCH=250 scripts/bench-send-instructions.sh
#   BENCH_BIN=DIR scripts/bench-send-instructions.sh # DIR's send-path-counts and apns-sandbox
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/bench.sh"
cd "$REPO_ROOT"
ensure_swift
ensure_apt_packages

PUSHES="${PUSHES:-2000}"
BATCH="${BATCH:-100}"
[[ "$PUSHES" =~ ^[1-9][0-9]*$ && "$BATCH" =~ ^[1-9][0-9]*$ ]] || { echo "PUSHES and BATCH must be positive integers" >&2; exit 2; }
if [[ -n "${BENCH_BIN:-}" ]]; then
    BIN="$BENCH_BIN"
else
    say "building send-path-counts and apns-sandbox (release)"
    for product in send-path-counts apns-sandbox; do swift build -c release --product "$product" >/dev/null; done
    BIN="$(swift build -c release --show-bin-path)"
fi
for product in send-path-counts apns-sandbox; do
    [[ -x "$BIN/$product" ]] || { echo "$BIN has no executable $product" >&2; exit 2; }
done
WORK="$(mktemp -d /tmp/linkstr-send-instructions.XXXXXX)"
PIDS=()
trap 'for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT
bench_token_sandbox sandbox
callgrind_copy "$BIN/send-path-counts" "$WORK/send-path-counts"

count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$WORK/send-path-counts" \
        "https://localhost:$SANDBOX_PORT" "$WORK/sandbox-ca.pem" "$APNS_KEY_FILE" "$PUSHES" "$BATCH" "$1" >"$WORK/run.log" 2>&1 ||
        { cat "$WORK/run.log" >&2; exit 1; }
    grep -oP 'Collected : \K[0-9]+' "$WORK/run.log"
}

say "counting $PUSHES pushes in batches of $BATCH built, then built and sent"
built="$(count build)"
sent="$(count send)"
echo "instructions per push on the APNs send path: $(( (sent - built) / PUSHES )) (built only $built, built and sent $sent)"
