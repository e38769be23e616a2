#!/usr/bin/env bash
# Brings the local system up: PostgreSQL on loopback, migrations, and the linkstr-push gateway
# in the foreground (Ctrl-C stops everything). Today's gateway stores registrations, queues
# pushes and drains the queue with a sender that logs each push (APNS_DISABLE=1); the HTTP/2 APNs
# sender with the local APNs sandbox, and the relay watcher, join in issues #3/#4.
#   scripts/up.sh            # gateway on 127.0.0.1:8787, PostgreSQL on 127.0.0.1:55433
#   GATEWAY_PORT=9000 PG_PORT=6000 scripts/up.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/postgres.sh"
cd "$REPO_ROOT"

setup_all

GATEWAY_PORT="${GATEWAY_PORT:-8787}"
PG_PORT="${PG_PORT:-55433}"
STATE_DIR="${LINKSTR_STATE_DIR:-/var/tmp/linkstr-local}"
mkdir -p "$STATE_DIR"
chmod 755 "$STATE_DIR"

say "building linkstr and linkstr-push (release)"
swift build -c release --product linkstr
swift build -c release --product linkstr-push
BIN="$(swift build -c release --show-bin-path)"

pg_start_cluster "$STATE_DIR/pg" "$PG_PORT"
trap 'say "stopping PostgreSQL"; pg_stop_cluster "$STATE_DIR/pg"' EXIT

export LISTEN_ADDR="127.0.0.1:$GATEWAY_PORT"
export PUBLIC_URL="http://127.0.0.1:$GATEWAY_PORT"
export APNS_DISABLE=1            # no APNs sandbox yet: the sender is added with the delivery pipeline
export APNS_TOPIC="${APNS_TOPIC:-app.linkstr.local}"
export ADMIN_TOKEN="${ADMIN_TOKEN:-local-admin-token}"
export MIGRATIONS_DIR="$REPO_ROOT/migrations"

say "applying migrations"
"$BIN/linkstr-push" migrate

DEMO_KEYS="$("$BIN/linkstr" keys generate)"
DEMO_NSEC="$(awk '/^nsec:/ {print $2}' <<<"$DEMO_KEYS")"
DEMO_HEX="$(awk '/^hex:/ {print $2}' <<<"$DEMO_KEYS")"
OTHER_NSEC="$("$BIN/linkstr" keys generate | awk '/^nsec:/ {print $2}')"
TOKEN="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
cat <<EOT

==> linkstr-push is starting on http://127.0.0.1:$GATEWAY_PORT (database $DATABASE_URL)
    Try it from another terminal (a demo key was generated for you):

    export LINKSTR_NSEC=$DEMO_NSEC
    BODY='{"device_token":"$TOKEN","apns_environment":"sandbox"}'
    curl -s -X POST http://127.0.0.1:$GATEWAY_PORT/v1/devices/register -H 'content-type: application/json' \\
      -H "Authorization: \$($BIN/linkstr-push sign-request --method POST --path /v1/devices/register --body "\$BODY")" -d "\$BODY"
    curl -s http://127.0.0.1:$GATEWAY_PORT/v1/devices -H "Authorization: \$($BIN/linkstr-push sign-request --method GET --path /v1/devices)"
    # ask for a push to yourself from another key (the gateway skips the sender), then watch this log:
    PUSH='{"notification_type":"new_post","event_id":"e1","conversation_id":"C1","recipient_pubkeys":["$DEMO_HEX"]}'
    curl -s -X POST http://127.0.0.1:$GATEWAY_PORT/v1/push -H 'content-type: application/json' \
      -H "Authorization: \$($BIN/linkstr-push sign-request --nsec $OTHER_NSEC --method POST --path /v1/push --body "\$PUSH")" -d "\$PUSH"
    $BIN/linkstr-push admin status --url http://127.0.0.1:$GATEWAY_PORT --token $ADMIN_TOKEN

EOT
"$BIN/linkstr-push" serve --no-migrate
