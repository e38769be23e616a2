#!/usr/bin/env bash
# Builds the libFuzzer targets of Fuzz/ (release, AddressSanitizer) and runs each for FUZZ_SECONDS
# on a copy of its committed seed corpus (so the corpus in git never grows by itself), as many at
# once as there are cores (FUZZ_JOBS). Crash, hang and leak reproducers go to Fuzz/artifacts/
# (ignored by git); the script exits non-zero if any target found one, naming the target and the
# reproducer.
#   scripts/fuzz.sh                                    # every target, 30 s each
#   FUZZ_SECONDS=300 FUZZ_TARGETS="json nip44" scripts/fuzz.sh
#   Fuzz/.build-fuzz/release/fuzz-json Fuzz/artifacts/json-crash-…   # replay one reproducer
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
cd "$REPO_ROOT"

ALL_TARGETS=(json event relay-message nip19 nip44 base64 nip98 linkstr-payload gateway-requests relay-url)
FUZZ_SECONDS="${FUZZ_SECONDS:-30}"
read -r -a TARGETS <<< "${FUZZ_TARGETS:-${ALL_TARGETS[*]}}"
for target in "${TARGETS[@]}"; do
    if [[ ! " ${ALL_TARGETS[*]} " == *" $target "* ]]; then
        echo "unknown fuzz target '$target'; known: ${ALL_TARGETS[*]}" >&2
        exit 2
    fi
done

setup_all

# SwiftPM's own --sanitize=fuzzer: with it SwiftPM stops renaming each executable's entry point to
# <module>_main (for @testable executables), which otherwise fails the link because libFuzzer, not
# the target, defines main. AddressSanitizer goes through -Xswiftc, not a second --sanitize: SwiftPM
# keeps sanitizers in a Set and writes one -sanitize= per entry in that Set's (per-run random)
# order, and swiftc keeps only the last -sanitize=, so half the builds lost the coverage
# instrumentation (libFuzzer then runs blind) and each order change rebuilt everything. User flags
# come last, so `-sanitize=fuzzer,address` is what swiftc gets; C code gets fuzzer coverage only.
BUILD_FLAGS=(-c release --scratch-path .build-fuzz --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library)
say "building fuzz targets: ${TARGETS[*]}"
# One product at a time: a plain `swift build` would also build the root package's executables
# (the gateway, the CLI, the load tools) with the sanitizers, which no target needs.
for target in "${TARGETS[@]}"; do
    (cd Fuzz && swift build "${BUILD_FLAGS[@]}" --product "fuzz-$target")
done
BIN="$(cd Fuzz && swift build "${BUILD_FLAGS[@]}" --show-bin-path)"

ARTIFACTS="$REPO_ROOT/Fuzz/artifacts"
mkdir -p "$ARTIFACTS"
WORK="$(mktemp -d /tmp/linkstr-fuzz.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
# Symbolized stacks in the reports; the toolchain ships llvm-symbolizer next to swift.
SYMBOLIZER="$(dirname "$(readlink -f "$(command -v swift)")")/llvm-symbolizer"
[[ -x "$SYMBOLIZER" ]] && export ASAN_SYMBOLIZER_PATH="$SYMBOLIZER"

# One target's run: its status line, and on a failure the report and a line in $WORK/<target>.failed.
fuzz_one() {
    local target="$1" corpus="$WORK/corpus-$1" log="$WORK/$1.log" status=0 summary reproducer
    cp -R "Fuzz/corpus/$target" "$corpus"
    local options=(-max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
        -artifact_prefix="$ARTIFACTS/$target-")
    [[ -f "Fuzz/dictionaries/$target.dict" ]] && options+=(-dict="Fuzz/dictionaries/$target.dict")
    "$BIN/fuzz-$target" "${options[@]}" "$corpus" > "$log" 2>&1 || status=$?
    # The last status line: "#N<tab>DONE cov: C ft: F corp: K/Sb lim: L exec/s: E rss: RMb".
    summary="$(grep -E '^#[0-9]+[[:space:]]+[A-Z]+ +cov:' "$log" | tail -n 1 | tr '\t' ' ' || true)"
    printf '    %-16s %s\n' "$target" "${summary:-no status line}"
    if ((status == 0)) && ! grep -q -E 'INITED cov:' "$log"; then
        # libFuzzer saw no coverage counters: the build lost its instrumentation and fuzzed blind.
        cp "$log" "$ARTIFACTS/$target.log"
        echo "$target: built without coverage instrumentation (no cov: in $ARTIFACTS/$target.log)" > "$WORK/$target.failed"
    fi
    if ((status != 0)); then
        reproducer="$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)"
        cp "$log" "$ARTIFACTS/$target.log"
        {
            echo "---- $target failed (exit $status); the report:"
            # From the first line of the report (Swift's backtrace, a sanitizer's or libFuzzer's) on.
            # Swift's backtracer, which names the runtime failure, can make ASan report a
            # global-buffer-overflow in itself afterwards: the failure is the first report.
            awk '/Fatal error|runtime failure|\*\*\* Signal|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|ALARM: working/ { on = 1 } on' "$log" |
                grep -v -E '^#[0-9]+[[:space:]]' | head -n 40
        } >&2
        echo "$target: reproducer ${reproducer:-none written}, full log $ARTIFACTS/$target.log" > "$WORK/$target.failed"
    fi
}

# As many targets at once as there are cores (FUZZ_JOBS): each libFuzzer process uses one.
JOBS="${FUZZ_JOBS:-$(nproc)}"
say "fuzzing ${#TARGETS[@]} targets for ${FUZZ_SECONDS}s each, $JOBS at a time"
running=0
for target in "${TARGETS[@]}"; do
    if ((running >= JOBS)); then
        wait -n || true
        running=$((running - 1))
    fi
    fuzz_one "$target" &
    running=$((running + 1))
done
wait

failures=()
for target in "${TARGETS[@]}"; do
    [[ -f "$WORK/$target.failed" ]] && failures+=("$(cat "$WORK/$target.failed")")
done

if ((${#failures[@]} > 0)); then
    echo "fuzzing found problems in ${#failures[@]} of ${#TARGETS[@]} targets:" >&2
    printf '  %s\n' "${failures[@]}" >&2
    exit 1
fi
say "no crashes, hangs or leaks in ${TARGETS[*]} (${FUZZ_SECONDS}s each)"
