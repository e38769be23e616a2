#!/usr/bin/env bash
# The client library's ingest benchmark (issue #5), release build, nothing but this process:
# builds EVENTS gift wraps of a realistic history for one account, then prints the baseline (one
# core unwrapping them), live ingest wraps/s (unwrap → ledger → SQLite in batches), the time to
# restore all of them into an empty store, and peak memory. Figures go to docs/performance.md.
#   scripts/bench-ingest.sh
#   EVENTS=10000 RUNS=3 scripts/bench-ingest.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
cd "$REPO_ROOT"
ensure_apt_packages
# BENCH_BIN=DIR runs the linkstr-load already built there (scripts/test.sh's full run).
if [[ -n "${BENCH_BIN:-}" ]]; then
    LOAD="$BENCH_BIN/linkstr-load"
else
    swift build -c release --product linkstr-load >/dev/null
    LOAD=.build/release/linkstr-load
fi
for run in $(seq 1 "${RUNS:-3}"); do
    say "run $run"
    "$LOAD" ingest --events "${EVENTS:-10000}"
done
