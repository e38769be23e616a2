#!/usr/bin/env bash
# Installs what building and testing need, idempotently, and says what it does.
# Sourced by scripts/test.sh, scripts/up.sh and scripts/bench.sh.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="$REPO_ROOT/.venv"

say() { printf '==> %s\n' "$*"; }

# Debian packages: libsecp256k1 (signatures, ECDH), pkg-config (SwiftPM finds libsecp256k1
# through it), SQLite (the client library's store, through GRDB), PostgreSQL (the gateway's store,
# started per test run), curl (the examples up.sh prints), librsvg2-bin (rsvg-convert: the tests
# render push-load's SVG chart), prometheus (promtool: the tests check the alerting rules and the
# dashboard's queries in deploy/ with it), chromium and chromium-driver (the tests open the
# operator console in a headless browser), libnss-wrapper (a gateway under test resolves test
# host names from a hosts file of the test's own, as a real resolver would answer them), valgrind
# (the instruction counts, one of which the tests run in miniature).
APT_PACKAGES=(libsecp256k1-dev libsqlite3-dev pkg-config postgresql curl librsvg2-bin prometheus chromium chromium-driver libnss-wrapper valgrind)
# python3-venv only when the python3 on PATH cannot make a virtualenv by itself.
python3 -c 'import venv, ensurepip' 2>/dev/null || APT_PACKAGES+=(python3-venv)

ensure_apt_packages() {
    local missing=()
    for package in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    if ((${#missing[@]} == 0)); then
        say "apt packages present: ${APT_PACKAGES[*]}"
        return
    fi
    local sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    say "installing apt packages: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

ensure_python_venv() {
    local requirements="$REPO_ROOT/scripts/requirements.txt"
    local stamp="$VENV/.requirements.sha256"
    local digest
    digest="$(sha256sum "$requirements" | cut -d' ' -f1)"
    if [[ -x "$VENV/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$digest" ]]; then
        say "python virtualenv up to date: $VENV"
        return
    fi
    say "creating python virtualenv $VENV with $(grep -v '^#' "$requirements" | xargs)"
    [[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    echo "$digest" > "$stamp"
}

# Copies executable $1 to $2 for callgrind: valgrind 3.19 cannot read the DWARF that Swift 6.3
# emits, so the copy keeps its symbols and drops its debug info.
callgrind_copy() { strip --strip-debug -o "$2" "$1"; }

ensure_swift() {
    if ! command -v swift >/dev/null 2>&1; then
        echo "swift is not on PATH: install Swift 6.3 first (https://www.swift.org/install/linux/)" >&2
        exit 1
    fi
    say "using $(swift --version 2>/dev/null | head -n 1)"
}

setup_all() {
    ensure_swift
    ensure_apt_packages
    ensure_python_venv
}
