# Shared by the benchmark scripts: release builds of the three executables, a work directory, a
# throwaway PostgreSQL cluster in it, and cleanup of everything started (append pids to PIDS).
#   source scripts/lib/bench.sh; bench_start NAME   # sets BIN, WORK, DATABASE_URL
bench_start() {
    local name="$1"
    say "building linkstr-push, apns-sandbox and linkstr-load (release)"
    for product in linkstr-push apns-sandbox linkstr-load; do swift build -c release --product "$product"; done
    BIN="$(swift build -c release --show-bin-path)"
    WORK="$(mktemp -d "/tmp/linkstr-$name.XXXXXX")"
    chmod 755 "$WORK"
    PIDS=()
    trap bench_cleanup EXIT
    pg_start_cluster "$WORK/pg" "$(pg_free_port)"
}

bench_cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    pg_stop_cluster "$WORK/pg"; rm -rf "$WORK"
}
