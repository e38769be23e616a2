#!/usr/bin/env bash
# Runs every test: installs what is missing, builds once, then runs all suites from that build
# (unit, vector and live interop against rust-nostr).
#   scripts/test.sh                 # everything
#   scripts/test.sh --filter NIP44  # passes extra arguments to `swift test`
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/postgres.sh"
cd "$REPO_ROOT"

setup_all

if [[ ! -d "$REPO_ROOT/../shared/vectors" ]]; then
    say "note: ../shared/vectors not found; vector-file tests are skipped, embedded vectors still run"
fi

export LINKSTR_STRICT=1  # warnings are errors in our own targets (see Package.swift)
export LINKSTR_PYTHON="$VENV/bin/python"

say "building (debug, tests included)"
swift build --build-tests

# A throwaway PostgreSQL cluster on loopback for the gateway tests; each test makes its own database.
PG_DIR="$(mktemp -d /tmp/linkstr-test-pg.XXXXXX)"
trap 'pg_stop_cluster "$PG_DIR"; rm -rf "$PG_DIR"' EXIT
pg_start_cluster "$PG_DIR" "$(pg_free_port)"

say "running tests"
swift test --skip-build "$@"
