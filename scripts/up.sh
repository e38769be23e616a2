#!/usr/bin/env bash
# Brings the local system up. Today that is the protocol library and the `linkstr` CLI; the
# gateway issues add PostgreSQL, the APNs sandbox, a relay and `linkstr-push` to this script.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
cd "$REPO_ROOT"

setup_all

say "building linkstr (release)"
swift build -c release --product linkstr
BIN="$(swift build -c release --show-bin-path)"

say "linkstr CLI: $BIN/linkstr"
"$BIN/linkstr" --help
echo
say "a fresh key pair, to try it:"
"$BIN/linkstr" keys generate
echo
say "not yet part of the local system: PostgreSQL, APNs sandbox, relay and the linkstr-push gateway (issues #3, #4)"
