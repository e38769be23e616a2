#!/usr/bin/env bash
# Two builds, one benchmark, alternated: the way to tell a change from the machine's drift.
#
#   scripts/bench-compare.sh BENCH DIR_A DIR_B
#   ROUNDS=4 RATE=10000 scripts/bench-compare.sh watch /work/before /work/after
#   scripts/bench-compare.sh gateway "" /work/after          # "" is this checkout, built here
#   scripts/bench-compare.sh --summary /tmp/bench-compare.XXXXXX   # a finished run's table again
#   scripts/bench-compare.sh --figures gateway run.log   # the figures it reads from one run's output
#
# BENCH is watch, inbox, gateway or idle (scripts/bench-BENCH.sh). DIR_A and DIR_B are BENCH_BIN
# folders (each with its own `migrations` when the schema differs; see scripts/lib/bench.sh).
# Every other setting (RATE, PG_LOCALE, …) goes to both. Each round runs A, B, B, A: the speed
# of this machine drifts by more than most changes are worth (the same build has measured 80 and
# 90 µs a wrap a minute apart), and a steady drift within a round then weighs on both builds
# alike, where A-then-B pairs charge it all to B. Five pairs of A-then-B runs once favoured a
# setting by 3–4 µs a wrap that three rounds in another order showed to be worth nothing.
#
# Prints each run's figures as it ends, then per build the mean and range of each figure and the
# mean difference B − A over the rounds (each round's B mean against its A mean), with how many
# rounds had B below A. Every run's full output is kept in $COMPARE_LOGS (default a temporary
# folder), named by round, position and build, with the figures of all of them (figures.tsv).
set -euo pipefail
# Paths given are the caller's: relative ones are taken from where it was run, not the repository.
CALLER_DIR="$PWD"
from_caller() { if [[ -z "$1" || "$1" == /* ]]; then echo "$1"; else echo "$CALLER_DIR/$1"; fi; }
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Per build the mean and range of each figure in FIGURES (round, build, name, value a line), and
# the mean difference B − A over the rounds.
summary() {
    awk -F'\t' '
        { key = $3; seen[key] = 1; v = $4 + 0
          n[key, $2]++; sum[key, $2] += v
          if (!((key, $2) in lo) || v < lo[key, $2]) lo[key, $2] = v
          if (!((key, $2) in hi) || v > hi[key, $2]) hi[key, $2] = v
          rs[key, $1, $2] += v; rn[key, $1, $2]++; rounds[$1] = 1 }
        END {
          printf "%-22s %26s %26s %12s %10s\n", "figure", "A mean (range)", "B mean (range)", "B - A", "B < A"
          for (key in seen) {
            d = 0; c = 0; lower = 0
            for (r in rounds) if (rn[key, r, "A"] && rn[key, r, "B"]) {
              diff = rs[key, r, "B"] / rn[key, r, "B"] - rs[key, r, "A"] / rn[key, r, "A"]; d += diff; c++; if (diff < 0) lower++ }
            printf "%-22s %26s %26s %12s %10s\n", key,
              sprintf("%.1f (%g-%g)", sum[key, "A"] / n[key, "A"], lo[key, "A"], hi[key, "A"]),
              sprintf("%.1f (%g-%g)", sum[key, "B"] / n[key, "B"], lo[key, "B"], hi[key, "B"]),
              sprintf("%+.1f", c ? d / c : 0), lower "/" c
          }
        }' "$1" | (read -r header; echo "$header"; sort)
}

# The figures a benchmark's output gives, as `name value` lines: figures BENCH LOG. Where a figure
# is printed more than once (the inbox's warm-up stream, then the measured one), the last.
figures() {
    local bench="$1" log="$2" latency=relay-to-APNs
    [[ "$bench" == inbox ]] && latency=publish-to-APNs
    case "$bench" in
        watch | inbox)
            sed -nE \
                -e 's/^CPU per wrap .*gateway ([0-9.]+) sandbox ([0-9.]+) postgres ([0-9.]+); gateway \+ postgres ([0-9.]+).*/cpu_per_wrap_us \4\ngateway_us \1\npostgres_us \3\nsandbox_us \2/p' \
                -e "s/^$latency latency ms: p50 ([0-9.]+) .*p99 ([0-9.]+).*/p50_ms \\1\\np99_ms \\2/p" \
                -e 's/^gateway VmHWM:[[:space:]]*([0-9]+) kB/peak_mb \1/p' "$log" |
                awk '$1 == "peak_mb" { $2 = sprintf("%.1f", $2 / 1024) }
                     !($1 in last) { names[++count] = $1 } { last[$1] = $2 }
                     END { for (i = 1; i <= count; i++) print names[i], last[names[i]] }'
            ;;
        idle)
            sed -nE 's/^idle CPU \(ms a second\): gateway ([0-9.]+) postgres ([0-9.]+); PostgreSQL alone .*: ([0-9.]+)/idle_gateway_ms_per_s \1\nidle_postgres_ms_per_s \2\npostgres_alone_ms_per_s \3/p' "$log"
            ;;
        gateway)
            sed -nE \
                -e 's/^registrations: .* = ([0-9]+) registrations\/s.*/registrations_per_s \1/p' \
                -e 's/^tps = ([0-9.]+).*/pgbench_tps \1/p' \
                -e 's/^pushes\/s \(notifications to (apns|fcm|webpush)\): ([0-9]+)/\1_pushes_per_s \2/p' \
                -e 's/^finished in .*, ([0-9.]+) req\/s.*/h2load_req_per_s \1/p' \
                -e 's/^CPU per request under h2load .*: sandbox ([0-9.]+)/h2load_sandbox_us \1/p' "$log"
            sed -nE 's/^CPU per registration .*postgres ([0-9.]+); gateway \+ postgres ([0-9.]+).*/registration_cpu_us \2\nregistration_postgres_us \1/p' "$log"
            # The CPU-per-push lines come in the phases' order: APNs, FCM, Web Push.
            sed -nE 's/^CPU per push .*sandbox ([0-9.]+) postgres ([0-9.]+); gateway \+ postgres ([0-9.]+).*/\3 \2 \1/p' "$log" |
                awk 'NR == 1 { print "apns_cpu_per_push_us", $1; print "apns_postgres_us", $2; print "apns_sandbox_us", $3 }
                     NR == 2 { print "fcm_cpu_per_push_us", $1 } NR == 3 { print "webpush_cpu_per_push_us", $1 }'
            ;;
    esac
}

check_bench() {
    case "$1" in
        watch | inbox | gateway | idle) ;;
        *) echo "BENCH must be watch, inbox, gateway or idle, not '$1'" >&2; exit 2 ;;
    esac
}

if [[ "${1:-}" == --summary && $# -eq 2 ]]; then
    summary "$(from_caller "$2")/figures.tsv"
    exit
fi
if [[ "${1:-}" == --figures && $# -eq 3 ]]; then
    check_bench "$2"
    log="$(from_caller "$3")"
    [[ -f "$log" ]] || { echo "$3 is not a file" >&2; exit 2; }
    found="$(figures "$2" "$log")"
    [[ -n "$found" ]] || { echo "no $2 figures in $3" >&2; exit 1; }
    echo "$found"
    exit
fi
[[ $# -eq 3 ]] || { sed -n '4,8p' "$0" >&2; exit 2; }
BENCH="$1"
DIRS=("$(from_caller "$2")" "$(from_caller "$3")")
check_bench "$BENCH"
ROUNDS="${ROUNDS:-3}"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive integer" >&2; exit 2; }
# This script's rounds: not passed on, where bench-watch.sh would read it as streams per run.
export -n ROUNDS
for dir in "${DIRS[@]}"; do
    [[ -z "$dir" || -d "$dir" ]] || { echo "$dir is not a folder" >&2; exit 2; }
done
COMPARE_LOGS="$(from_caller "${COMPARE_LOGS:-$(mktemp -d /tmp/bench-compare.XXXXXX)}")"
mkdir -p "$COMPARE_LOGS"

results="$COMPARE_LOGS/figures.tsv"
: >"$results"
for round in $(seq 1 "$ROUNDS"); do
    position=0
    for which in 0 1 1 0; do
        position=$((position + 1))
        label=$([[ $which -eq 0 ]] && echo A || echo B)
        log="$COMPARE_LOGS/round$round-$position-$label.log"
        if [[ -n "${DIRS[$which]}" ]]; then
            BENCH_BIN="${DIRS[$which]}" "scripts/bench-$BENCH.sh" >"$log" 2>&1 || { echo "round $round, $label failed: $log" >&2; exit 1; }
        else
            env -u BENCH_BIN "scripts/bench-$BENCH.sh" >"$log" 2>&1 || { echo "round $round, $label failed: $log" >&2; exit 1; }
        fi
        line="$(figures "$BENCH" "$log" | awk -v r="$round" -v b="$label" -v out="$results" '{ printf "%s %s=%s", (NR > 1 ? "," : ""), $1, $2; print r "\t" b "\t" $1 "\t" $2 >> out }')"
        [[ -n "$line" ]] || { echo "round $round, $label: no figures in $log" >&2; exit 1; }
        echo "round $round $label ($(date +%T)):$line"
    done
done

echo
echo "A = ${DIRS[0]:-this checkout}, B = ${DIRS[1]:-this checkout}; $ROUNDS rounds of A B B A; logs in $COMPARE_LOGS"
summary "$results"
