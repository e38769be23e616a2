#!/usr/bin/env bash
# End-to-end load on the local system that scripts/up.sh brings up (run that first, in another
# terminal): registrations, gift wraps through the relay and the gateway's watcher, typed pushes,
# all the way to the APNs sandbox. Prints registrations/s, wraps/s, pushes/s delivered, latency
# p50/p95/p99/max and errors by kind; writes load-results/results.csv and load-results/latency.svg.
# Loopback only; bounded by DURATION (seconds) and the rates.
#   scripts/load/push-load.sh
#   USERS=4000 WRAP_RATE=200 PUSH_RATE=200 DURATION=20 scripts/load/push-load.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/setup.sh"
cd "$REPO_ROOT"
STATE_DIR="${STATE_DIR:-/var/tmp/linkstr-local}"
GATEWAY="${GATEWAY:-http://127.0.0.1:8787}"
curl -fsS "$GATEWAY/readyz" >/dev/null 2>&1 || {
    echo "the local system is not up at $GATEWAY: run scripts/up.sh first (in another terminal)" >&2
    exit 1
}
say "building push-load (release)"
swift build -c release --product push-load >/dev/null
"$(swift build -c release --show-bin-path)/push-load" \
    --gateway "$GATEWAY" --relay "${RELAY:-ws://127.0.0.1:7447}" --sandbox "${SANDBOX:-https://localhost:2197}" \
    --ca "$STATE_DIR/apns-sandbox-ca.pem" --users "${USERS:-2000}" --senders "${SENDERS:-20}" \
    --wrap-rate "${WRAP_RATE:-100}" --push-rate "${PUSH_RATE:-100}" --duration "${DURATION:-10}" --out "${OUT:-load-results}"
