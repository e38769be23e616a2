#!/usr/bin/env bash
# Runs the crypto benchmarks (package-benchmark, release build) and, in the same run, the
# rust-nostr baseline through its Python bindings. Figures go to docs/performance.md by hand.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
cd "$REPO_ROOT"
setup_all

say "rust-nostr baseline (nostr-sdk Python bindings, one thread)"
"$VENV/bin/python" scripts/bench/rust_nostr_baseline.py --seconds "${BASELINE_SECONDS:-3}"

say "NostrProtocol benchmarks (swift package benchmark, release)"
cd Benchmarks
swift package --disable-sandbox benchmark --no-progress "$@"
