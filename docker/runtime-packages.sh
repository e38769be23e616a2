#!/usr/bin/env bash
# Prints the Debian packages that hold the shared libraries the given binaries load (ldd's full
# closure), one per line, sorted. Libraries of the Swift toolchain are left out: the image links
# the Swift runtime statically (--static-swift-stdlib), but what those libraries load themselves
# (libcurl for FoundationNetworking, for example) is kept. docker/runtime-packages.txt is this
# script's output for the three executables; a test regenerates it from the built binaries and
# fails when the two differ, so the image's library list cannot drift.
#   docker/runtime-packages.sh .build/debug/linkstr-push .build/debug/apns-sandbox .build/debug/linkstr
set -euo pipefail
[[ $# -gt 0 ]] || { echo "usage: $0 BINARY..." >&2; exit 2; }

owner() {
    local path="$1" real candidate
    real="$(readlink -f "$path")"
    for candidate in "$path" "$real" "${path#/usr}" "/usr$path" "${real#/usr}" "/usr$real"; do
        if out="$(dpkg -S "$candidate" 2>/dev/null)"; then
            printf '%s\n' "${out%%:*}"
            return 0
        fi
    done
    echo "no Debian package owns $path" >&2
    return 1
}

for binary in "$@"; do
    if ldd "$binary" | grep -q "not found"; then
        echo "$binary: a library it needs is not installed:" >&2
        ldd "$binary" | grep "not found" >&2
        exit 1
    fi
done
for binary in "$@"; do
    ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'
done | sort -u | while read -r library; do
    case "$(readlink -f "$library")" in
        */swift/linux/*|*/swift-*/usr/lib/*) continue ;;
    esac
    owner "$library"
done | sed 's/:.*//' | sort -u
