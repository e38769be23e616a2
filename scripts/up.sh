#!/usr/bin/env bash
# Brings the local system up: PostgreSQL on loopback, migrations, a Nostr relay (nostr-relay from
# PyPI), the push-service sandbox (HTTP/2 over TLS with its own CA: APNs checking the gateway's
# provider tokens, FCM with its own service account, Web Push) and the linkstr-push gateway in the
# foreground, watching the relay and delivering real pushes to the sandbox (Ctrl-C stops
# everything).
#   scripts/up.sh   # gateway 127.0.0.1:8787, relay ws://127.0.0.1:7447, sandbox 127.0.0.1:2197, PostgreSQL 127.0.0.1:55433
#   GATEWAY_PORT=9000 RELAY_PORT=7000 SANDBOX_PORT=3000 PG_PORT=6000 scripts/up.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/postgres.sh"
cd "$REPO_ROOT"

setup_all

GATEWAY_PORT="${GATEWAY_PORT:-8787}"
PG_PORT="${PG_PORT:-55433}"
SANDBOX_PORT="${SANDBOX_PORT:-2197}"
RELAY_PORT="${RELAY_PORT:-7447}"
STATE_DIR="${LINKSTR_STATE_DIR:-/var/tmp/linkstr-local}"
mkdir -p "$STATE_DIR"
chmod 755 "$STATE_DIR"

say "building linkstr, linkstr-push and apns-sandbox (release)"
swift build -c release --product linkstr
swift build -c release --product linkstr-push
swift build -c release --product apns-sandbox
BIN="$(swift build -c release --show-bin-path)"

pg_start_cluster "$STATE_DIR/pg" "$PG_PORT"
SANDBOX_PID=""
RELAY_PID=""
cleanup() {
    if [[ -n "$SANDBOX_PID" ]]; then say "stopping the APNs sandbox"; kill "$SANDBOX_PID" 2>/dev/null || true; wait "$SANDBOX_PID" 2>/dev/null || true; fi
    # The relay runs in its own process group (a gunicorn master and its worker).
    if [[ -n "$RELAY_PID" ]]; then say "stopping the relay"; kill -- "-$RELAY_PID" 2>/dev/null || true; wait "$RELAY_PID" 2>/dev/null || true; fi
    say "stopping PostgreSQL"; pg_stop_cluster "$STATE_DIR/pg"
}
trap cleanup EXIT

# A local APNs key (made by the sandbox on first run) that the gateway signs provider tokens with.
APNS_KEY_FILE="$STATE_DIR/apns-key.p8"
export APNS_TOPIC="${APNS_TOPIC:-app.linkstr.local}"
export APNS_KEY_ID="${APNS_KEY_ID:-LOCALKEY01}"
export APNS_TEAM_ID="${APNS_TEAM_ID:-LOCALTEAM1}"
export APNS_KEY_P8_PATH="$APNS_KEY_FILE"
export APNS_CA_FILE="$STATE_DIR/apns-sandbox-ca.pem"
export APNS_SANDBOX_URL="https://localhost:$SANDBOX_PORT"
export APNS_PRODUCTION_URL="https://localhost:$SANDBOX_PORT"
# FCM, to the sandbox's FCM face on the same port, with the service account key file the sandbox
# writes once it listens (a new key each start; its token_uri names the sandbox).
export FCM_SERVICE_ACCOUNT_FILE="$STATE_DIR/fcm-service-account.json"
export FCM_API_URL="https://localhost:$SANDBOX_PORT/fcm"
export FCM_CA_FILE="$APNS_CA_FILE"

say "starting the push-service sandbox (APNs, FCM, Web Push) on https://localhost:$SANDBOX_PORT"
rm -f "$APNS_CA_FILE" "$FCM_SERVICE_ACCOUNT_FILE"
"$BIN/apns-sandbox" --port "$SANDBOX_PORT" --key-id "$APNS_KEY_ID" --team-id "$APNS_TEAM_ID" --key "$APNS_KEY_FILE" --create-key \
    --topic "$APNS_TOPIC" --ca-out "$APNS_CA_FILE" --deliveries "$STATE_DIR/deliveries.jsonl" \
    --fcm-service-account "$FCM_SERVICE_ACCOUNT_FILE" &
SANDBOX_PID=$!
for _ in $(seq 1 100); do [[ -s "$APNS_CA_FILE" && -s "$FCM_SERVICE_ACCOUNT_FILE" ]] && break; sleep 0.1; done
[[ -s "$APNS_CA_FILE" && -s "$FCM_SERVICE_ACCOUNT_FILE" ]] || { echo "the sandbox did not start" >&2; exit 1; }

say "starting a Nostr relay (nostr-relay) on ws://127.0.0.1:$RELAY_PORT"
mkdir -p "$STATE_DIR/relay"
cat > "$STATE_DIR/relay/config.yaml" <<EOC
DEBUG: false
relay_name: linkstr local relay
storage:
  sqlalchemy.url: sqlite+aiosqlite:///$STATE_DIR/relay/nostr.sqlite3
  validators: [nostr_relay.validators.is_signed]
gunicorn:
  bind: 127.0.0.1:$RELAY_PORT
  workers: 1
  loglevel: warning
authentication:
  enabled: false
subscription_limit: 256
message_timeout: 1800
EOC
setsid "$VENV/bin/nostr-relay" -c "$STATE_DIR/relay/config.yaml" serve >"$STATE_DIR/relay/relay.log" 2>&1 </dev/null &
RELAY_PID=$!
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$RELAY_PORT") 2>/dev/null && break; sleep 0.1; done
(exec 3<>"/dev/tcp/127.0.0.1/$RELAY_PORT") 2>/dev/null || { echo "the relay did not start; see $STATE_DIR/relay/relay.log" >&2; exit 1; }
export RELAYS="${RELAYS:-ws://127.0.0.1:$RELAY_PORT}"

export LISTEN_ADDR="127.0.0.1:$GATEWAY_PORT"
export PUBLIC_URL="http://127.0.0.1:$GATEWAY_PORT"
export ADMIN_TOKEN="${ADMIN_TOKEN:-local-admin-token}"
# Everything local comes from one address (the load scripts in scripts/load/ included): no
# per-address limit here. The per-pubkey limit keeps its production default.
export RATE_LIMIT_IP="${RATE_LIMIT_IP:-0}"
export MIGRATIONS_DIR="$REPO_ROOT/migrations"
# Web Push and UnifiedPush, to the sandbox's Web Push face on the same port (its endpoints are on
# localhost, which only WEBPUSH_ALLOW_PRIVATE_ENDPOINTS lets a registration name).
export VAPID_SUBJECT="${VAPID_SUBJECT:-mailto:ops@localhost}"
export WEBPUSH_CA_FILE="$APNS_CA_FILE"
export WEBPUSH_ALLOW_PRIVATE_ENDPOINTS="${WEBPUSH_ALLOW_PRIVATE_ENDPOINTS:-1}"

say "applying migrations"
"$BIN/linkstr-push" migrate

DEMO_KEYS="$("$BIN/linkstr" keys generate)"
DEMO_NSEC="$(awk '/^nsec:/ {print $2}' <<<"$DEMO_KEYS")"
DEMO_HEX="$(awk '/^hex:/ {print $2}' <<<"$DEMO_KEYS")"
OTHER_NSEC="$("$BIN/linkstr" keys generate | awk '/^nsec:/ {print $2}')"
TOKEN="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
TOKEN2="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
VOIP_TOKEN="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
# The sandbox's FCM face takes any registration token but those its scripts start with.
FCM_TOKEN="sandbox-android-token-$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
cat <<EOT

==> linkstr-push is starting on http://127.0.0.1:$GATEWAY_PORT (database $DATABASE_URL, watching $RELAYS)
    Try it from another terminal (a demo key was generated for you):

    export LINKSTR_NSEC=$DEMO_NSEC
    sign() { $BIN/linkstr-push sign-request "\$@"; }
    # 1. a device that the gateway pushes by itself when a gift wrap to you reaches the relay:
    BODY='{"device_token":"$TOKEN","apns_environment":"sandbox","relay_watch":true}'
    curl -s -X POST http://127.0.0.1:$GATEWAY_PORT/v1/devices/register -H 'content-type: application/json' \
      -H "Authorization: \$(sign --method POST --path /v1/devices/register --body "\$BODY")" -d "\$BODY"
    # ... then, in one line, publish a gift wrap to yourself and see its push arrive at the sandbox:
    $BIN/linkstr wrap send --nsec $OTHER_NSEC --to $DEMO_HEX --relay $RELAYS && sleep 1 && curl -s --cacert $APNS_CA_FILE "https://localhost:$SANDBOX_PORT/deliveries?after=0" | grep -o '"type":"gift_wrap"[^}]*'
    # 2. a device registered as the linkstr app does (no relay_watch) gets typed pushes that a sender asks for:
    BODY='{"device_token":"$TOKEN2","apns_environment":"sandbox"}'
    curl -s -X POST http://127.0.0.1:$GATEWAY_PORT/v1/devices/register -H 'content-type: application/json' \
      -H "Authorization: \$(sign --method POST --path /v1/devices/register --body "\$BODY")" -d "\$BODY"
    PUSH='{"notification_type":"new_post","event_id":"e1","conversation_id":"C1","recipient_pubkeys":["$DEMO_HEX"]}'
    curl -s -X POST http://127.0.0.1:$GATEWAY_PORT/v1/push -H 'content-type: application/json' \
      -H "Authorization: \$(sign --nsec $OTHER_NSEC --method POST --path /v1/push --body "\$PUSH")" -d "\$PUSH"
    # 3. a browser: the sandbox's Web Push face makes a subscription as a browser's push service
    #    would; registered, it gets the same push, encrypted to its keys and signed with VAPID:
    SUB="\$(curl -s --cacert $APNS_CA_FILE -X POST https://localhost:$SANDBOX_PORT/webpush/subscriptions)"
    BODY="{\"platform\":\"webpush\",\"subscription\":\$SUB}"
    curl -s -X POST http://127.0.0.1:$GATEWAY_PORT/v1/devices/register -H 'content-type: application/json' \
      -H "Authorization: \$(sign --method POST --path /v1/devices/register --body "\$BODY")" -d "\$BODY"
    PUSH='{"notification_type":"new_post","event_id":"e2","conversation_id":"C1","recipient_pubkeys":["$DEMO_HEX"]}'
    curl -s -X POST http://127.0.0.1:$GATEWAY_PORT/v1/push -H 'content-type: application/json' \
      -H "Authorization: \$(sign --nsec $OTHER_NSEC --method POST --path /v1/push --body "\$PUSH")" -d "\$PUSH"
    curl -s --cacert $APNS_CA_FILE https://localhost:$SANDBOX_PORT/webpush/deliveries   # the decrypted plaintext
    curl -s http://127.0.0.1:$GATEWAY_PORT/v1/webpush/vapid-public-key                # a web app's applicationServerKey
    # 4. an Android phone: its FCM registration token, registered, gets the same push through FCM's
    #    messages:send (the sandbox's FCM face), the ids as data and the job's id as push_id:
    BODY='{"platform":"fcm","device_token":"$FCM_TOKEN"}'
    curl -s -X POST http://127.0.0.1:$GATEWAY_PORT/v1/devices/register -H 'content-type: application/json' \
      -H "Authorization: \$(sign --method POST --path /v1/devices/register --body "\$BODY")" -d "\$BODY"
    PUSH='{"notification_type":"new_post","event_id":"e3","conversation_id":"C1","recipient_pubkeys":["$DEMO_HEX"]}'
    curl -s -X POST http://127.0.0.1:$GATEWAY_PORT/v1/push -H 'content-type: application/json' \
      -H "Authorization: \$(sign --nsec $OTHER_NSEC --method POST --path /v1/push --body "\$PUSH")" -d "\$PUSH"
    curl -s --cacert $APNS_CA_FILE https://localhost:$SANDBOX_PORT/fcm/deliveries       # the messages as FCM got them
    # 5. an open Android phone (UnifiedPush): its distributor's endpoint, here one the sandbox's Web Push
    #    face makes without keys (?plain=1), so the push arrives as plain JSON; registered with the
    #    subscription's "keys" too, it would be encrypted as for a browser:
    UP_ENDPOINT="\$(curl -s --cacert $APNS_CA_FILE -X POST 'https://localhost:$SANDBOX_PORT/webpush/subscriptions?plain=1' | python3 -c 'import json, sys; print(json.load(sys.stdin)["endpoint"])')"
    BODY="{\"platform\":\"unifiedpush\",\"endpoint\":\"\$UP_ENDPOINT\"}"
    curl -s -X POST http://127.0.0.1:$GATEWAY_PORT/v1/devices/register -H 'content-type: application/json' \
      -H "Authorization: \$(sign --method POST --path /v1/devices/register --body "\$BODY")" -d "\$BODY"
    PUSH='{"notification_type":"new_post","event_id":"e4","conversation_id":"C1","recipient_pubkeys":["$DEMO_HEX"]}'
    curl -s -X POST http://127.0.0.1:$GATEWAY_PORT/v1/push -H 'content-type: application/json' \
      -H "Authorization: \$(sign --nsec $OTHER_NSEC --method POST --path /v1/push --body "\$PUSH")" -d "\$PUSH"
    curl -s --cacert $APNS_CA_FILE https://localhost:$SANDBOX_PORT/webpush/deliveries   # the last one, as it was POSTed
    # 6. an iPhone's PushKit (VoIP) token: an incoming_call rings it with a VoIP push to the app's
    #    .voip topic (the user's alert token gets nothing), and goes at high priority to the
    #    Android phones and the browser:
    BODY='{"device_token":"$VOIP_TOKEN","apns_environment":"sandbox","push_type":"voip"}'
    curl -s -X POST http://127.0.0.1:$GATEWAY_PORT/v1/devices/register -H 'content-type: application/json' \
      -H "Authorization: \$(sign --method POST --path /v1/devices/register --body "\$BODY")" -d "\$BODY"
    PUSH='{"notification_type":"incoming_call","event_id":"call1","conversation_id":"C1","recipient_pubkeys":["$DEMO_HEX"]}'
    curl -s -X POST http://127.0.0.1:$GATEWAY_PORT/v1/push -H 'content-type: application/json' \
      -H "Authorization: \$(sign --nsec $OTHER_NSEC --method POST --path /v1/push --body "\$PUSH")" -d "\$PUSH"
    curl -s --cacert $APNS_CA_FILE https://localhost:$SANDBOX_PORT/deliveries | grep -o '"apns_push_type":"voip","apns_topic":"[^"]*"'
    # what arrived, and the state of things:
    curl -s http://127.0.0.1:$GATEWAY_PORT/v1/devices -H "Authorization: \$(sign --method GET --path /v1/devices)"
    curl -s --cacert $APNS_CA_FILE https://localhost:$SANDBOX_PORT/deliveries    # also in $STATE_DIR/deliveries.jsonl
    curl -s http://127.0.0.1:$GATEWAY_PORT/metrics | grep linkstr_pushes_total
    $BIN/linkstr-push admin status --url http://127.0.0.1:$GATEWAY_PORT --token $ADMIN_TOKEN
    # the operator's console: open http://127.0.0.1:$GATEWAY_PORT/admin and sign in with $ADMIN_TOKEN
    # scripted APNs failures: register a token starting 0410 (Unregistered), 0400 (BadDeviceToken),
    # 05003 (three 500s, then success) and watch the device go or the retries in /deliveries.
    # scripted FCM failures: an fcm token starting unregistered (the device goes), mismatch
    # (SENDER_ID_MISMATCH: configuration_errors in the admin status) or quota3 (three 429s, then
    # success), 32 characters or more in all; see /fcm/deliveries.

EOT
"$BIN/linkstr-push" serve --no-migrate
