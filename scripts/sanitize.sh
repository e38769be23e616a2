#!/usr/bin/env bash
# Runs the release executables under AddressSanitizer and ThreadSanitizer: each sanitizer gets its
# own release build (.build-address, .build-thread), and the suites that start executables (the
# CLI end to end through a real relay, the gateway's process, abuse and fault tests) run on them.
# Every report the sanitizers write is collected and printed; the script fails if there is one.
#   scripts/sanitize.sh                    # both
#   SANITIZERS=thread scripts/sanitize.sh  # one
# Slow (two more release builds of everything), so not part of scripts/test.sh.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/postgres.sh"
cd "$REPO_ROOT"
setup_all
export LINKSTR_PYTHON="$VENV/bin/python"

SUITES='CLITests|GatewayProcessTests|AbuseProcessTests|FaultTests|HostileRelayProcessTests'
say "building the test bundle (debug), which starts the sanitized executables"
swift build --build-tests

PG_DIR="$(mktemp -d /tmp/linkstr-sanitize-pg.XXXXXX)"
REPORTS="$(mktemp -d /tmp/linkstr-sanitize-reports.XXXXXX)"
trap 'pg_stop_cluster "$PG_DIR"; rm -rf "$PG_DIR"' EXIT
pg_start_cluster "$PG_DIR" "$(pg_free_port)"

failed=0
for sanitizer in ${SANITIZERS:-address thread}; do
    scratch="$REPO_ROOT/.build-$sanitizer"
    say "building release executables with -sanitize=$sanitizer in $scratch"
    swift build -c release --scratch-path "$scratch" -Xswiftc -sanitize="$sanitizer"
    bin="$(swift build -c release --scratch-path "$scratch" --show-bin-path)"
    mkdir -p "$REPORTS/$sanitizer"
    say "running $SUITES on them"
    # Reports go to files (a process's own log is read by no one once its test passes); leak
    # checking is off: Swift's runtime keeps metadata for the process's life by design. TSan skips
    # the races in synchronization it cannot see (scripts/tsan-suppressions.txt says which).
    status=0
    ASAN_OPTIONS="log_path=$REPORTS/$sanitizer/report:detect_leaks=0:abort_on_error=0" \
    TSAN_OPTIONS="log_path=$REPORTS/$sanitizer/report:halt_on_error=0:suppressions=$REPO_ROOT/scripts/tsan-suppressions.txt" \
        LINKSTR_BIN_DIR="$bin" swift test --skip-build --filter "$SUITES" || status=$?
    reports=("$REPORTS/$sanitizer"/report*)
    if [[ -e "${reports[0]}" ]]; then
        say "$sanitizer: ${#reports[@]} report file(s)"
        for report in "${reports[@]}"; do echo "--- $report"; head -c 20000 "$report"; done
        failed=1
    else
        say "$sanitizer: no reports"
    fi
    [[ $status -eq 0 ]] || { say "$sanitizer: the suites failed (exit $status)"; failed=1; }
done
say "reports kept in $REPORTS"
exit $failed
