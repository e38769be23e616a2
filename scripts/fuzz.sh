#!/usr/bin/env bash
# Builds the libFuzzer targets of Fuzz/ (release, AddressSanitizer) and runs each for FUZZ_SECONDS
# on a copy of its committed seed corpus, so the corpus in git never grows by itself. Crash, hang
# and leak reproducers go to Fuzz/artifacts/ (ignored by git); the script exits non-zero if any
# target found one, naming the target and the reproducer.
#   scripts/fuzz.sh                                    # every target, 30 s each
#   FUZZ_SECONDS=300 FUZZ_TARGETS="json nip44" scripts/fuzz.sh
#   Fuzz/.build-fuzz/release/fuzz-json Fuzz/artifacts/json-crash-…   # replay one reproducer
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
cd "$REPO_ROOT"

ALL_TARGETS=(json event relay-message nip19 nip44 base64 nip98 linkstr-payload gateway-requests)
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

failures=()
for target in "${TARGETS[@]}"; do
    corpus="$WORK/corpus-$target"
    cp -R "Fuzz/corpus/$target" "$corpus"
    options=(-max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
        -artifact_prefix="$ARTIFACTS/$target-")
    [[ -f "Fuzz/dictionaries/$target.dict" ]] && options+=(-dict="Fuzz/dictionaries/$target.dict")
    log="$WORK/$target.log"
    say "fuzzing $target for ${FUZZ_SECONDS}s"
    status=0
    "$BIN/fuzz-$target" "${options[@]}" "$corpus" > "$log" 2>&1 || status=$?
    # The last status line: "#N<tab>DONE cov: C ft: F corp: K/Sb lim: L exec/s: E rss: RMb".
    summary="$(grep -E '^#[0-9]+[[:space:]]+[A-Z]+ +cov:' "$log" | tail -n 1 | tr '\t' ' ' || true)"
    printf '    %s\n' "${summary:-no status line}"
    if ((status == 0)) && ! grep -q -E 'INITED cov:' "$log"; then
        # libFuzzer saw no coverage counters: the build lost its instrumentation and fuzzed blind.
        failures+=("$target: built without coverage instrumentation (no cov: in $ARTIFACTS/$target.log)")
        cp "$log" "$ARTIFACTS/$target.log"
    fi
    if ((status != 0)); then
        reproducer="$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)"
        cp "$log" "$ARTIFACTS/$target.log"
        echo "---- $target failed (exit $status); the report:" >&2
        # From the first line of the report (Swift's backtrace, a sanitizer's or libFuzzer's) on.
        # Swift's backtracer, which names the runtime failure, can make ASan report a
        # global-buffer-overflow in itself afterwards: the failure is the first report.
        awk '/Fatal error|runtime failure|\*\*\* Signal|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|ALARM: working/ { on = 1 } on' "$log" |
            grep -v -E '^#[0-9]+[[:space:]]' | head -n 40 >&2
        failures+=("$target: reproducer ${reproducer:-none written}, full log $ARTIFACTS/$target.log")
    fi
done

if ((${#failures[@]} > 0)); then
    echo "fuzzing found problems in ${#failures[@]} of ${#TARGETS[@]} targets:" >&2
    printf '  %s\n' "${failures[@]}" >&2
    exit 1
fi
say "no crashes, hangs or leaks in ${TARGETS[*]} (${FUZZ_SECONDS}s each)"
