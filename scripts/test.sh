#!/usr/bin/env bash
# Runs every test: installs what is missing, builds once, then runs all suites from that build
# (unit, vector, process, end to end through real relays, live interop against rust-nostr), the
# miscompile reduction, the benchmarks in miniature and the fuzz targets.
#   scripts/test.sh                 # everything, on a release build
#   scripts/test.sh --unit          # the unit tests only (Tests/*/Unit): no servers, seconds
#   scripts/test.sh --filter NIP44  # passes extra arguments to `swift test`, on a debug build
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/postgres.sh"
cd "$REPO_ROOT"

if [[ "${1:-}" == "--unit" ]]; then
    # Values and pure logic only: a debug build and no PostgreSQL, relay, sandbox or Python.
    ensure_swift
    export LINKSTR_STRICT=1
    python3 scripts/test_kinds.py
    swift build --build-tests
    say "running the unit tests"
    exec swift test --skip-build --filter "$(python3 scripts/test_kinds.py --filter)"
fi

setup_all

if [[ ! -d "$REPO_ROOT/../shared/vectors" ]]; then
    say "note: ../shared/vectors not found; vector-file tests are skipped, embedded vectors still run"
fi

say "Package.swift declares exactly what each target imports (scripts/lint_imports.py)"
"$VENV/bin/python" scripts/lint_imports.py
"$VENV/bin/python" scripts/lint_imports.py Fuzz
say "tests live by kind: Unit/, Integration/, Support/ (scripts/test_kinds.py)"
"$VENV/bin/python" scripts/test_kinds.py
say "formatting (swift format lint --strict, configured by .swift-format)"
swift format lint --strict --recursive --parallel Sources Tests Benchmarks Fuzz Package.swift

export LINKSTR_STRICT=1  # warnings are errors in our own targets (see Package.swift)
export LINKSTR_PYTHON="$VENV/bin/python"

# What users run is a release build, and the optimizer can break what the debug build does not
# (a release-only crash in `linkstr post` once did). So the full run builds in release only, and
# every suite runs there: the tests import no module @testable, so SwiftPM compiles the library
# modules and the executables exactly as `swift build -c release` does, and the process suites
# start the very binaries a user runs. One configuration also means the dependencies are compiled
# once. A filtered run is for iterating on a change: it builds in debug, which recompiles faster.
# LINKSTR_CONFIGURATION=debug|release overrides the choice.
if [[ $# -eq 0 ]]; then CONFIGURATION="${LINKSTR_CONFIGURATION:-release}"; else CONFIGURATION="${LINKSTR_CONFIGURATION:-debug}"; fi
say "building ($CONFIGURATION, tests included)"
swift build -c "$CONFIGURATION" --build-tests
BIN="$(swift build -c "$CONFIGURATION" --show-bin-path)"

# A throwaway PostgreSQL cluster on loopback for the gateway tests; each test makes its own database.
PG_DIR="$(mktemp -d /tmp/linkstr-test-pg.XXXXXX)"
trap 'pg_stop_cluster "$PG_DIR"; rm -rf "$PG_DIR"' EXIT
pg_start_cluster "$PG_DIR" "$(pg_free_port)"

say "running tests ($CONFIGURATION)"
if [[ $# -eq 0 ]]; then
    # Headless Chromium and the chart renders take both cores for seconds at a time; beside the
    # process suites, whose limits are timing-bound, they starved them. They run on their own after.
    HEAVY="ConsoleBrowserTests|LoadChartTests|MonitoringFilesTests"
    swift test -c "$CONFIGURATION" --skip-build --skip "$HEAVY"
    say "running the browser, chart and monitoring tests on their own"
    swift test -c "$CONFIGURATION" --skip-build --filter "$HEAVY"
else
    swift test -c "$CONFIGURATION" --skip-build "$@"
fi

# The rest runs on the full run only. LINKSTR_SKIP_EXTRAS=1 skips it.
if [[ $# -eq 0 && "${LINKSTR_SKIP_EXTRAS:-}" != 1 ]]; then
    say "the task-group tuple miscompile reduction (Tests/Regressions)"
    REGRESSION="$REPO_ROOT/Tests/Regressions/TaskGroupTupleAcrossSuspension"
    swift build -c release --package-path "$REGRESSION" --scratch-path "$REPO_ROOT/.build-regressions"
    # The shape the code uses must hold; the shape it avoids shows whether the compiler still
    # needs the workaround (its failure is expected with Swift 6.3 and only reported).
    "$REPO_ROOT/.build-regressions/release/Reproduction" awaited
    if timeout 60 "$REPO_ROOT/.build-regressions/release/Reproduction" split >/dev/null 2>&1; then
        say "note: this compiler no longer loses split tuple results; the workarounds citing swiftlang/swift#91911 may go"
    else
        say "as expected with this compiler: the split shape is miscompiled (swiftlang/swift#91911), the workaround holds"
    fi

    say "benchmark smoke runs on the $CONFIGURATION executables (tiny sizes; they must run end to end, and print what scripts/bench-compare.sh reads; the values are not checked)"
    # bench_smoke BENCH "FIGURE …" command…: runs a benchmark and fails unless bench-compare.sh
    # finds each FIGURE in its output, so a change to what a benchmark prints cannot quietly
    # leave comparisons without it. (The CPU figures of a phase under a second long are not
    # measured, so the gateway's smoke run is not asked for them.)
    bench_smoke() {
        local bench="$1" wanted="$2" log found name
        shift 2
        log="$(mktemp)"
        "$@" 2>&1 | tee "$log"
        found="$(scripts/bench-compare.sh --figures "$bench" "$log" | cut -d' ' -f1)"
        rm -f "$log"
        for name in $wanted; do
            grep -qx "$name" <<<"$found" || { echo "scripts/bench-compare.sh found no $name in the $bench benchmark's output" >&2; exit 1; }
        done
    }
    STREAM_FIGURES="p50_ms p99_ms cpu_per_wrap_us gateway_us postgres_us sandbox_us peak_mb"
    bench_smoke gateway "h2load_req_per_s pgbench_tps registrations_per_s apns_pushes_per_s" \
        env BENCH_BIN="$BIN" REGISTRATIONS=400 DEVICES=200 PUSHES=4 RECIPIENTS=50 SMOKE=1 scripts/bench-gateway.sh
    bench_smoke watch "$STREAM_FIGURES" env BENCH_BIN="$BIN" COLD=1 WATCHED=2000 RATE=200 SECONDS_=3 scripts/bench-watch.sh
    bench_smoke watch "$STREAM_FIGURES" env BENCH_BIN="$BIN" COLD=1 USER_RELAYS=20 WATCHED=400 RATE=100 SECONDS_=2 scripts/bench-watch.sh
    bench_smoke inbox "$STREAM_FIGURES" env BENCH_BIN="$BIN" RECIPIENTS=2000 HISTORY=1000 RATE=200 SECONDS_=2 scripts/bench-inbox.sh
    bench_smoke idle "idle_gateway_ms_per_s idle_postgres_ms_per_s postgres_alone_ms_per_s" \
        env BENCH_BIN="$BIN" IDLE_SECONDS=1 scripts/bench-idle.sh
    EVENTS=500 RUNS=1 BENCH_BIN="$BIN" scripts/bench-ingest.sh
    # The send path under callgrind, two batches after the warm-up: it must deliver every push
    # and print its figure.
    send_log="$(mktemp)"
    PUSHES=100 BATCH=50 BENCH_BIN="$BIN" scripts/bench-send-instructions.sh | tee "$send_log"
    grep -q "^instructions per push on the APNs send path: [1-9]" "$send_log" ||
        { echo "scripts/bench-send-instructions.sh printed no figure" >&2; exit 1; }
    rm -f "$send_log"
    # The watcher's gateway under callgrind, a few wraps after its warm-up: it must count them.
    watch_log="$(mktemp)"
    watch_profile="$(mktemp)"
    env BENCH_BIN="$BIN" CALLGRIND=1 CALLGRIND_OUT="$watch_profile" CALLGRIND_WARMUP=2 COLD=1 WATCHED=500 RATE=50 SECONDS_=6 \
        scripts/bench-watch.sh | tee "$watch_log"
    grep -q "^gateway instructions a wrap (callgrind): [1-9]" "$watch_log" ||
        { echo "scripts/bench-watch.sh CALLGRIND=1 printed no figure" >&2; exit 1; }
    rm -f "$watch_log" "$watch_profile"

    # Every parser of outside input under libFuzzer with AddressSanitizer, from the committed seed
    # corpus, 30 s each (FUZZ_SECONDS); a crash, hang or leak fails the run. Built after the
    # release executables, not beside them: on two cores the two builds together took two minutes
    # longer than one after the other.
    say "fuzzing: every parser of outside input (scripts/fuzz.sh)"
    FUZZ_SECONDS="${FUZZ_SECONDS:-30}" scripts/fuzz.sh
fi
