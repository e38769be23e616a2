# Shared by the benchmark scripts: release builds of the three executables, a work directory, a
# throwaway PostgreSQL cluster in it, and cleanup of everything started (append pids to PIDS).
#   source scripts/lib/bench.sh; bench_start NAME   # sets BIN, WORK, DATABASE_URL, PG_PORT_USED
# BENCH_BIN=DIR runs the executables already in DIR instead (no build): to alternate two builds
# in one sitting, copy each build's three executables to a folder of its own, and with them its
# `migrations` folder when the schema differs (see bench_migrations).
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
    PG_PORT_USED="$(pg_free_port)"
    pg_start_cluster "$WORK/pg" "$PG_PORT_USED"
}

# The migrations the executables run: BENCH_BIN's own `migrations` folder when it has one (a
# build from before a schema change runs on the schema it was written for), else the
# repository's.
bench_migrations() {
    if [[ -n "${BENCH_BIN:-}" && -d "$BENCH_BIN/migrations" ]]; then echo "$BENCH_BIN/migrations"; else echo "$REPO_ROOT/migrations"; fi
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
    # To the tick: at one decimal a 20,000-registration window rounded each process to 5 µs a
    # registration, the size of the differences being measured.
    awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", t / hz }'
}

# Where the machine's CPU went over a window, per process of a spec
# ("gateway=PID sandbox=PID postgres=pg:DIR"): cpu_window_start SPEC opens the window,
# cpu_window_close LABEL closes it: CPU_WINDOW_LINE is then
# "CPU during LABEL (seconds; N available on C cores): gateway X sandbox Y postgres Z", and
# CPU_WINDOW_USED each process's seconds (not in a subshell, which would lose them).
declare -gA CPU_WINDOW_BEFORE=()
declare -gA CPU_WINDOW_USED=()
CPU_WINDOW_SPEC=""
CPU_WINDOW_START=0
cpu_window_start() {
    local entry
    CPU_WINDOW_SPEC="$1"; CPU_WINDOW_START=$EPOCHREALTIME; CPU_WINDOW_BEFORE=(); CPU_WINDOW_USED=()
    for entry in $CPU_WINDOW_SPEC; do CPU_WINDOW_BEFORE[${entry%%=*}]="$(cpu_seconds "${entry#*=}")"; done
}
CPU_WINDOW_LINE=""
CPU_WINDOW_SECONDS=0
cpu_window_close() {
    local entry name
    CPU_WINDOW_SECONDS="$(awk -v a="$EPOCHREALTIME" -v b="$CPU_WINDOW_START" 'BEGIN { printf "%.2f", a - b }')"
    CPU_WINDOW_LINE="CPU during $1 (seconds; $(awk -v s="$CPU_WINDOW_SECONDS" -v n="$(nproc)" 'BEGIN { printf "%.1f", s * n }') available on $(nproc) cores):"
    for entry in $CPU_WINDOW_SPEC; do
        name="${entry%%=*}"
        CPU_WINDOW_USED[$name]="$(awk -v a="$(cpu_seconds "${entry#*=}")" -v b="${CPU_WINDOW_BEFORE[$name]}" 'BEGIN { printf "%.2f", a - b }')"
        CPU_WINDOW_LINE+=" $name ${CPU_WINDOW_USED[$name]}"
    done
}

# The last closed window's CPU per operation, in µs, by process and for the gateway and
# PostgreSQL together (what the gateway costs a deployment; the sandbox and the load tool stand in
# for APNs and the clients): cpu_per_operation COUNT NOUN, e.g. cpu_per_operation 50000 push.
cpu_per_operation() {
    local count="$1" noun="$2" entry name line
    [[ "$count" -gt 0 ]] || return 0
    # /proc counts CPU in 10 ms ticks: over a window this short (the test command's smoke runs)
    # the figures would be mostly rounding.
    if awk -v s="$CPU_WINDOW_SECONDS" 'BEGIN { exit !(s < 1) }'; then
        echo "CPU per $noun: not measured (a ${CPU_WINDOW_SECONDS} s window is too short for /proc's 10 ms ticks)"
        return 0
    fi
    line="CPU per $noun (µs; $count in the window):"
    for entry in $CPU_WINDOW_SPEC; do
        name="${entry%%=*}"
        line+=" $name $(awk -v s="${CPU_WINDOW_USED[$name]}" -v n="$count" 'BEGIN { printf "%.0f", s * 1e6 / n }')"
    done
    line+="; gateway + postgres $(awk -v g="${CPU_WINDOW_USED[gateway]:-0}" -v p="${CPU_WINDOW_USED[postgres]:-0}" -v n="$count" \
        'BEGIN { printf "%.0f", (g + p) * 1e6 / n }')"
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
    cpu_window_close "$label"
    echo "$CPU_WINDOW_LINE, load tool $(awk '{ printf "%.2f", $1 + $2 }' "$times")"
    rm -f "$times"
}

# Runs a load command in the background whose output marks the measured part with two lines, and
# prints its output and where the machine's CPU went between those lines; set-up before the
# first line, such as registering the devices a push goes to, is left out. (The load tool is not
# counted: it may have exited by the last line, and in between it only polls.) Sets LOAD_PID.
#   cpu_between LABEL "gateway=PID sandbox=PID postgres=pg:DIR" FIRST_LINE LAST_LINE command...
cpu_between() {
    local label="$1" spec="$2" first="$3" last="$4" status=0
    shift 4
    "$@" >"$WORK/load.log" 2>&1 &
    LOAD_PID=$!
    await_load_line "$first"
    cpu_window_start "$spec"
    await_load_line "$last"
    cpu_window_close "$label"
    wait "$LOAD_PID" || status=$?
    cat "$WORK/load.log"
    echo "$CPU_WINDOW_LINE"
    return "$status"
}

# Starts an APNs sandbox: bench_sandbox NAME [args...]. Its port file, CA and log are
# $WORK/NAME.port, $WORK/NAME-ca.pem and $WORK/NAME.log; sets SANDBOX_PORT and SANDBOX_PID.
bench_sandbox() {
    local name="$1"; shift
    "$BIN/apns-sandbox" --port 0 --port-file "$WORK/$name.port" --ca-out "$WORK/$name-ca.pem" --log-level warning "$@" \
        >"$WORK/$name.log" 2>&1 &
    SANDBOX_PID=$!
    PIDS+=($SANDBOX_PID)
    for _ in $(seq 1 100); do [[ -s "$WORK/$name.port" ]] && break; sleep 0.1; done
    [[ -s "$WORK/$name.port" ]] || { cat "$WORK/$name.log" >&2; exit 1; }
    SANDBOX_PORT="$(cat "$WORK/$name.port")"
}

# The sandbox that checks provider tokens, for the gateway to push to: bench_token_sandbox NAME.
# Sets APNS_KEY_FILE besides what bench_sandbox sets; its FCM face's service account is
# $WORK/NAME-fcm.json (written before the port file).
bench_token_sandbox() {
    APNS_KEY_FILE="$WORK/apns-key.p8"
    bench_sandbox "$1" --key-id BENCHKEY01 --team-id BENCHTEAM1 --key "$APNS_KEY_FILE" --create-key --topic app.linkstr.bench \
        --fcm-service-account "$WORK/$1-fcm.json"
}

# FCM and Web Push on, both to that sandbox's faces: bench_transports_env NAME (after
# bench_gateway_env). Every token exchange and VAPID JWT is checked there as the real services do.
bench_transports_env() {
    export FCM_SERVICE_ACCOUNT_FILE="$WORK/$1-fcm.json" FCM_API_URL="https://localhost:$SANDBOX_PORT/fcm" FCM_CA_FILE="$WORK/$1-ca.pem"
    export VAPID_SUBJECT="mailto:bench@localhost" WEBPUSH_CA_FILE="$WORK/$1-ca.pem" WEBPUSH_ALLOW_PRIVATE_ENDPOINTS=1
}

# The gateway's environment for pushing to that sandbox (named NAME) on a fresh loopback port:
# bench_gateway_env NAME. One load generator on one address is no abuse, so the API's rate
# limits are off; every other setting keeps its production default.
bench_gateway_env() {
    export RATE_LIMIT_IP=0 RATE_LIMIT_PUBKEY=0
    export LISTEN_ADDR="127.0.0.1:$(pg_free_port)" LOG_LEVEL=warning APNS_TOPIC=app.linkstr.bench APNS_KEY_ID=BENCHKEY01 APNS_TEAM_ID=BENCHTEAM1
    export APNS_KEY_P8_PATH="$APNS_KEY_FILE" APNS_CA_FILE="$WORK/$1-ca.pem" DATABASE_URL
    export APNS_SANDBOX_URL="https://localhost:$SANDBOX_PORT" APNS_PRODUCTION_URL="https://localhost:$SANDBOX_PORT"
}

# Returns once the load tool (LOAD_PID, writing $WORK/load.log) has printed a line starting with
# $1, or has exited. tail -F waits on inotify: a loop of grep and sleep, 20 times a second, took
# about 4 % of the machine while wraps streamed (perf), CPU the gateway and PostgreSQL were short
# of. tail ends at its next line or with the load tool.
await_load_line() {
    grep -q -m1 "^$1" < <(exec tail -n +1 -F --pid="$LOAD_PID" "$WORK/load.log" 2>/dev/null) || true
}

# Where the time went, from the gateway's own histograms (bucket upper bounds): received from a
# relay to committed in the queue, and the APNs request itself (answered 200). Only histograms
# with observations are printed.
bench_gateway_histograms() {
    curl -s "http://$LISTEN_ADDR/metrics" | awk '
        function quantile(name, q,   i) { for (i = 1; i <= n[name]; i++) if (count[name, i] >= q * total[name]) return bound[name, i]; return "?" }
        /^linkstr_watch_relay_to_queue_seconds_bucket|^linkstr_apns_send_duration_seconds_bucket{status="200"/ {
            name = ($0 ~ /relay_to_queue/) ? "relay-to-queue" : "APNs request"
            match($0, /le="[^"]+"/); le = substr($0, RSTART + 4, RLENGTH - 5)
            n[name]++; bound[name, n[name]] = (le == "+Inf") ? "inf" : le * 1000; count[name, n[name]] += $NF
            if (le == "+Inf") total[name] += $NF
        }
        END { for (name in n) if (total[name] > 0) printf "gateway histogram %s ms: p50 <= %s  p99 <= %s\n", name, quantile(name, 0.5), quantile(name, 0.99) }'
}

# Stops the gateway GATEWAY_PID gracefully (releasing its shard leases for the next one), killing
# it when it has not stopped within 30 s; fails then.
bench_stop_gateway() {
    kill "$GATEWAY_PID" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$GATEWAY_PID" 2>/dev/null || break; sleep 0.1; done
    local stopped=0
    if kill -0 "$GATEWAY_PID" 2>/dev/null; then
        echo "gateway did not stop within 30 s; killed" >&2
        kill -9 "$GATEWAY_PID" 2>/dev/null || true
        stopped=1
    fi
    wait "$GATEWAY_PID" 2>/dev/null || true
    local kept=() pid
    for pid in "${PIDS[@]}"; do [[ $pid == "$GATEWAY_PID" ]] || kept+=("$pid"); done
    PIDS=("${kept[@]}")
    return "$stopped"
}

# PostgreSQL's per-statement figures (pg_stat_statements, planning counted): bench_pgstats_enable
# restarts the cluster with the extension loaded; bench_pgstats_reset starts counting afresh;
# bench_pgstats_print prints the 8 statements that took longest in all (on bench_start's cluster).
# With PGPLANS=1 as well, auto_explain logs the measured plan of one statement in 200 taking
# over 1 ms, node by node (EXPLAIN ANALYZE, buffers), to $PGPLANS_LOG (default
# /tmp/bench-plans.log) at the end: where a statement's time goes inside it.
bench_pgstats_enable() {
    # A list is given as separate literals: 'a,b' would be one library named "a,b".
    local libraries="'pg_stat_statements'"
    [[ "${PGPLANS:-}" == 1 ]] && libraries+=", 'auto_explain'"
    psql -q -h 127.0.0.1 -p "$PG_PORT_USED" -U linkstr linkstr -c "ALTER SYSTEM SET shared_preload_libraries = $libraries" >/dev/null
    pg_as_owner "$(pg_bin_dir)/pg_ctl" -D "$WORK/pg" -l "$WORK/pg/server.log" -w restart >/dev/null
    if [[ "${PGPLANS:-}" == 1 ]]; then
        # Known to ALTER SYSTEM only once the library is loaded.
        psql -q -h 127.0.0.1 -p "$PG_PORT_USED" -U linkstr linkstr -c "ALTER SYSTEM SET auto_explain.log_min_duration = 1" \
            -c "ALTER SYSTEM SET auto_explain.log_analyze = on" -c "ALTER SYSTEM SET auto_explain.log_buffers = on" \
            -c "ALTER SYSTEM SET auto_explain.sample_rate = 0.005" >/dev/null
    fi
    psql -q -h 127.0.0.1 -p "$PG_PORT_USED" -U linkstr linkstr -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" \
        -c "ALTER SYSTEM SET pg_stat_statements.track_planning = on" -c "SELECT pg_reload_conf()" -c "SELECT pg_stat_statements_reset()" >/dev/null
}
bench_pgstats_reset() {
    psql -q -h 127.0.0.1 -p "$PG_PORT_USED" -U linkstr linkstr -c "SELECT pg_stat_statements_reset()" >/dev/null
}
bench_pgstats_print() {
    if [[ "${PGPLANS:-}" == 1 ]]; then
        cp "$WORK/pg/server.log" "${PGPLANS_LOG:-/tmp/bench-plans.log}"
        say "sampled plans: $(grep -c 'duration:' "${PGPLANS_LOG:-/tmp/bench-plans.log}") in ${PGPLANS_LOG:-/tmp/bench-plans.log}"
    fi
    psql -h 127.0.0.1 -p "$PG_PORT_USED" -U linkstr linkstr -c "SELECT calls, plans, round(total_plan_time) AS plan_ms, round(total_exec_time) AS total_ms, round(mean_exec_time::numeric, 2) AS mean_ms,
        rows, wal_records, wal_fpi, pg_size_pretty(wal_bytes) AS wal, left(regexp_replace(query, '\s+', ' ', 'g'), 60) AS statement FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 8"
}

# Brings the database to a running gateway's steady state for wrap pushes: HISTORY wraps already
# seen over the last two days (the dedupe table a live gateway holds), planner statistics, and a
# CHECKPOINT. `device_pacing` stays empty: at the history's rate (a few wraps a second) nearly
# every device's row is stale and pruned by maintenance (every 5 minutes). A build from before
# migration 0023 (`BENCH_BIN`) kept a coalescing row for every device for good (`watch_coalesce`),
# so its steady state has one for every device; with that table empty at the ANALYZE, each of
# its record statements scanned the whole table as it grew (8 ms a batch). A gateway on a
# database created seconds before plans its statements for empty tables until autovacuum's first
# ANALYZE (within a minute). Without the CHECKPOINT, the set-up's WAL sets off a checkpoint in the
# middle of the stream, which a gateway that has been running does not carry.
# bench_steady_state HISTORY (on bench_start's cluster).
bench_steady_state() {
    psql -q -h 127.0.0.1 -p "$PG_PORT_USED" -U linkstr linkstr \
        -c "INSERT INTO seen_wraps (wrap_id, seen_at)
            SELECT encode(sha256(('seen' || i)::bytea), 'hex'), now() - make_interval(secs => i * 172800.0 / $1)
            FROM generate_series(1, $1) AS i" \
        -c "DO \$\$ BEGIN
              IF to_regclass('device_pacing') IS NULL THEN
                  INSERT INTO watch_coalesce (device_token, next_at) SELECT device_token, now() - interval '1 hour' FROM devices;
              END IF;
            END \$\$" \
        -c "VACUUM ANALYZE" -c "CHECKPOINT"
}

# While the load tool (LOAD_PID, writing $WORK/load.log) streams wraps to the gateway
# (GATEWAY_PID): where the machine's CPU went from its "streaming" line (the wraps are made and
# signed before) to its "sustained" line (the last push read from the sandbox), by process; then
# its output, that split, PostgreSQL's per-statement figures with PGSTATS=1, the gateway's own
# histograms and its memory. Sets LOAD_STATUS to the load tool's exit status.
bench_stream_figures() {
    await_load_line streaming
    cpu_window_start "gateway=$GATEWAY_PID sandbox=$SANDBOX_PID postgres=pg:$WORK/pg"
    await_load_line sustained
    cpu_window_close streaming
    LOAD_STATUS=0
    wait "$LOAD_PID" || LOAD_STATUS=$?
    cat "$WORK/load.log"
    echo "$CPU_WINDOW_LINE"
    cpu_per_operation "$(sed -nE 's/^streamed ([0-9]+) wraps.*/\1/p' "$WORK/load.log" | tail -1)" wrap
    if [[ "${PGSTATS:-}" == 1 ]]; then bench_pgstats_print; fi
    bench_gateway_histograms
    grep -E "VmHWM|VmRSS" "/proc/$GATEWAY_PID/status" | sed 's/^/gateway /'
}
