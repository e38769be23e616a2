#!/usr/bin/env bash
# Repeatable per-operation instruction counts under valgrind's callgrind, beside the raw
# libsecp256k1 verify baseline measured in the same run. Wall-clock figures on a shared 2-core
# machine swing by ±30 %; instruction counts do not.
#   scripts/bench-instructions.sh [iterations]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
cd "$REPO_ROOT"
ensure_swift
ensure_apt_packages

iterations="${1:-200}"
say "building InstructionCounts (release)"
(cd Benchmarks && swift build -c release --product InstructionCounts >/dev/null)
bin="$(cd Benchmarks && swift build -c release --show-bin-path)/InstructionCounts"
copy="$(mktemp)"
trap 'rm -f "$copy"' EXIT
callgrind_copy "$bin" "$copy"

count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$copy" "$1" "$2" 2>&1 | grep -oP 'Collected : \K[0-9]+'; }

raw=0
printf '| op | instructions/op | relative to raw libsecp256k1 verify |\n|---|---:|---:|\n'
for op in raw-verify verify parse-verify client-event-message relay-event-message sign ecdh nip44-encrypt nip44-decrypt wrap unwrap unwrap-cached; do
    base="$(count "$op" 0)"
    total="$(count "$op" "$iterations")"
    per=$(( (total - base) / iterations ))
    [[ "$op" == raw-verify ]] && raw=$per
    printf '| %s | %s | %s |\n' "$op" "$per" "$(python3 -c "print(f'{$per/$raw:.2f}x')")"
done
