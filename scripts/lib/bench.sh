# Shared by the benchmark scripts: release builds of the three executables, a work directory, a
# throwaway PostgreSQL cluster in it, and cleanup of everything started (append pids to PIDS).
#   source scripts/lib/bench.sh; bench_start NAME   # sets BIN, WORK, DATABASE_URL
# BENCH_BIN=DIR runs the executables already in DIR instead (no build): to alternate two builds
# in one sitting, copy each build's three executables to a folder of its own.
# Made absolute here, when the script sources this file and before it changes to the repository
# root, so a relative BENCH_BIN means relative to where the script was run from.
BENCH_PRODUCTS=(linkstr-push apns-sandbox linkstr-load)
if [[ -n "${BENCH_BIN:-}" ]]; then
    bench_bin_given="$BENCH_BIN"
    BENCH_BIN="$(CDPATH='' cd -- "$bench_bin_given" 2>/dev/null && pwd)" || { echo "BENCH_BIN=$bench_bin_given is not a directory" >&2; exit 2; }
fi

bench_start() {
    local name="$1"
    if [[ -n "${BENCH_BIN:-}" ]]; then
        # All three there, or stop now rather than half-way through a run.
        BIN="$BENCH_BIN"
        for product in "${BENCH_PRODUCTS[@]}"; do
            [[ -f "$BIN/$product" && -x "$BIN/$product" ]] || { echo "BENCH_BIN=$BIN has no executable $product" >&2; exit 2; }
        done
        say "using the executables in $BIN (BENCH_BIN)"
    else
        say "building linkstr-push, apns-sandbox and linkstr-load (release)"
        for product in "${BENCH_PRODUCTS[@]}"; do swift build -c release --product "$product"; done
        BIN="$(swift build -c release --show-bin-path)"
    fi
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

# CPU seconds (user + system) used so far by the given pids; for a PostgreSQL postmaster pass
# "pg:DIR": the postmaster, its live backends and the children it has reaped.
cpu_seconds() {
    local ticks=0 pid child
    for pid in "$@"; do
        if [[ $pid == pg:* ]]; then
            local master; master="$(head -1 "${pid#pg:}/postmaster.pid")"
            ticks=$((ticks + $(awk '{print $14+$15+$16+$17}' "/proc/$master/stat")))
            for child in $(pgrep -P "$master"); do ticks=$((ticks + $(awk '{print $14+$15}' "/proc/$child/stat" 2>/dev/null || echo 0))); done
        else
            ticks=$((ticks + $(awk '{print $14+$15}' "/proc/$pid/stat" 2>/dev/null || echo 0)))
        fi
    done
    awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t / hz }'
}

# Where the machine's CPU went over a window, per process of a spec
# ("gateway=PID sandbox=PID postgres=pg:DIR"): cpu_window_start SPEC opens the window,
# cpu_window_line LABEL closes it and prints
# "CPU during LABEL (seconds; N available on C cores): gateway X sandbox Y postgres Z".
declare -gA CPU_WINDOW_BEFORE=()
CPU_WINDOW_SPEC=""
CPU_WINDOW_START=0
cpu_window_start() {
    local entry
    CPU_WINDOW_SPEC="$1"; CPU_WINDOW_START=$SECONDS; CPU_WINDOW_BEFORE=()
    for entry in $CPU_WINDOW_SPEC; do CPU_WINDOW_BEFORE[${entry%%=*}]="$(cpu_seconds "${entry#*=}")"; done
}
cpu_window_line() {
    local entry line="CPU during $1 (seconds; $(( (SECONDS - CPU_WINDOW_START) * $(nproc) )) available on $(nproc) cores):"
    for entry in $CPU_WINDOW_SPEC; do
        line+=" ${entry%%=*} $(awk -v a="$(cpu_seconds "${entry#*=}")" -v b="${CPU_WINDOW_BEFORE[${entry%%=*}]}" 'BEGIN { printf "%.1f", a - b }')"
    done
    echo "$line"
}

# Runs a load phase and prints where the machine's CPU went during it, the load tool's included:
#   cpu_split LABEL "gateway=PID sandbox=PID postgres=pg:DIR" command...
cpu_split() {
    local label="$1" spec="$2"; shift 2
    local times saved
    cpu_window_start "$spec"
    times="$(mktemp)"
    exec {saved}>&2
    { TIMEFORMAT="%U %S"; time "$@" 2>&$saved; } 2>"$times"
    exec {saved}>&-
    echo "$(cpu_window_line "$label"), load tool $(awk '{ printf "%.1f", $1 + $2 }' "$times")"
    rm -f "$times"
}
