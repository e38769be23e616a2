/// The OpenAPI 3.1 description served at `GET /openapi.yaml`. A test checks that its paths and
/// methods are exactly the router's, so it cannot drift from the code.
public enum OpenAPIDocument {
    public static let yaml = """
        openapi: 3.1.0
        info:
          title: linkstr-push
          version: "1"
          description: |
            Push gateway for linkstr-style private Nostr apps. Signed routes take
            `Authorization: Nostr <base64 kind-27235 event>` in the linkstr dialect (tags method, path,
            payload_sha256, nonce) or standard NIP-98 (u, method, payload). Bodies are JSON, at most 64 KiB.
        components:
          securitySchemes:
            nostr:
              type: apiKey
              in: header
              name: Authorization
              description: "Nostr <standard base64 of the signed kind-27235 event JSON>"
            admin:
              type: http
              scheme: bearer
            adminSession:
              type: apiKey
              in: cookie
              name: linkstr_admin
          schemas:
            Error:
              type: object
              required: [error]
              properties:
                error: {type: string}
            Status:
              type: object
              required: [status]
              properties:
                status: {type: string}
            Register:
              type: object
              description: >-
                What a device needs depends on its platform. apns (the default): device_token (hex)
                and apns_environment, optionally push_type. fcm: device_token, an FCM registration
                token. webpush: subscription, the browser's PushSubscription.toJSON(). unifiedpush:
                endpoint, optionally keys. Endpoints must be https and, unless
                WEBPUSH_ALLOW_PRIVATE_ENDPOINTS is set, name and resolve to no loopback, private or
                link-local address (a host that resolves to no address is refused too; one the
                gateway could not look up is a 503, to try again). A platform not turned on is refused (400): fcm needs
                FCM_SERVICE_ACCOUNT_FILE, webpush and unifiedpush need VAPID_SUBJECT.
              properties:
                platform: {type: string, enum: [apns, fcm, webpush, unifiedpush], default: apns}
                device_token:
                  type: string
                  description: "apns: hex, 64 to 200 characters. fcm: 32 to 1024 of letters, digits, '-', '_', ':'."
                apns_environment: {type: string, description: "apns: sandbox or production, case-insensitive"}
                push_type:
                  type: string
                  enum: [alert, voip]
                  default: alert
                  description: "apns: voip registers a PushKit VoIP token (topic <bundle id>.voip)"
                subscription:
                  type: object
                  description: "webpush: PushSubscription.toJSON() as the browser gives it"
                  required: [endpoint, keys]
                  properties:
                    endpoint: {type: string, maxLength: 1024, pattern: "^[hH][tT][tT][pP][sS]://"}
                    keys: {$ref: "#/components/schemas/SubscriptionKeys"}
                endpoint: {type: string, maxLength: 1024, pattern: "^[hH][tT][tT][pP][sS]://", description: "unifiedpush: the distributor's endpoint"}
                keys: {$ref: "#/components/schemas/SubscriptionKeys"}
                topic: {type: string}
                relay_watch: {type: boolean, default: false}
                relays:
                  type: array
                  maxItems: 10
                  description: >-
                    The user's inbox relays, for when the user publishes no NIP-17 relay list: ws:// or
                    wss:// URLs, stored normalised; non-public addresses are refused unless
                    WATCH_ALLOW_PRIVATE_RELAYS is set. Each registration replaces the token's list.
                  items: {type: string, pattern: "^[wW][sS][sS]?://"}
            SubscriptionKeys:
              type: object
              description: RFC 8291 message keys, base64url without padding
              required: [p256dh, auth]
              properties:
                p256dh: {type: string, description: "a 65-byte uncompressed P-256 point"}
                auth: {type: string, description: "16 bytes"}
            Unregister:
              type: object
              description: One of device_token (apns, fcm) or endpoint (webpush, unifiedpush).
              properties:
                device_token: {type: string}
                endpoint: {type: string}
            ArchiveState:
              type: object
              required: [archived_conversation_ids]
              properties:
                archived_conversation_ids: {type: array, items: {type: string}}
                known_conversation_ids: {type: array, items: {type: string}}
            Push:
              type: object
              required: [notification_type, event_id, conversation_id, recipient_pubkeys]
              properties:
                notification_type: {type: string, enum: [new_post, new_emoji_reaction, new_message, mention, incoming_call, missed_call, group_invite]}
                event_id: {type: string, maxLength: 128}
                conversation_id: {type: string, maxLength: 128}
                recipient_pubkeys: {type: array, maxItems: 500, items: {type: string, pattern: "^[0-9a-fA-F]{64}$"}}
                emoji: {type: string}
                post_id: {type: string}
                push_type: {type: string, enum: [alert, background], description: "background: wake the app to refresh, no alert (not for incoming_call)"}
            PushAccepted:
              type: object
              required: [status, recipient_count, candidate_devices]
              properties:
                status: {type: string, const: accepted}
                recipient_count: {type: integer}
                candidate_devices: {type: integer}
            Suppressions:
              type: object
              required: [event_ids]
              properties:
                event_ids: {type: array, minItems: 1, maxItems: 500, items: {type: string, pattern: "^[0-9a-fA-F]{64}$"}}
            Suppressed:
              type: object
              required: [status, suppressed]
              properties:
                status: {type: string, const: suppressed}
                suppressed: {type: integer}
            Devices:
              type: object
              required: [devices]
              properties:
                inbox_relay:
                  type: [string, "null"]
                  description: >-
                    The gateway's own NIP-17 inbox relay (INBOX_RELAY=1), for the caller's kind
                    10050 list; null when it serves none.
                devices:
                  type: array
                  items:
                    type: object
                    properties:
                      platform: {type: string, enum: [apns, fcm, webpush, unifiedpush]}
                      device_token: {type: string, description: "apns and fcm"}
                      endpoint: {type: string, description: "webpush and unifiedpush"}
                      apns_environment: {type: string, description: apns}
                      push_type: {type: string, enum: [alert, voip], description: apns}
                      topic: {type: string}
                      relay_watch: {type: boolean}
                      relays: {type: array, items: {type: string}}
                      registered_at: {type: string, format: date-time}
                      watch:
                        type: object
                        description: >-
                          Relay-watch devices only, while the gateway watches relays: where the
                          user's gift wraps are looked for. `source` says where the relays came
                          from: the user's NIP-17 relay list (kind 10050), else the `relays` the
                          user's devices registered, else the gateway's own RELAYS. Each relay's
                          `state`: `watching`, `auth-required` (the relay serves gift wraps only
                          to their recipient after NIP-42 AUTH), `refused` (the relay refused the
                          REQ, or its address is not public), `unreachable`, or `over-limit`
                          (beyond the per-user or per-instance relay limits).
                        required: [source, relays]
                        properties:
                          source: {type: string, enum: ["10050", registration, default]}
                          relays:
                            type: array
                            items:
                              type: object
                              required: [url, state]
                              properties:
                                url: {type: string}
                                state: {type: string, enum: [watching, auth-required, refused, unreachable, over-limit]}
          responses:
            BadRequest:
              description: Invalid body
              content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}
            Unauthorized:
              description: Missing, invalid, expired or replayed authorization
              content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}
            RateLimited:
              description: Over the per-IP or per-pubkey rate limit; retry after `Retry-After` seconds
              headers:
                Retry-After: {schema: {type: integer, minimum: 1}}
              content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}
            StorageError:
              description: The database failed
              content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}
            LookupFailed:
              description: The endpoint's host could not be looked up now; the same request may be sent again
              content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}
        paths:
          /healthz:
            get:
              summary: Liveness
              responses:
                "200": {description: Alive, content: {application/json: {schema: {$ref: "#/components/schemas/Status"}}}}
          /readyz:
            get:
              summary: Readiness (database reachable and migrated)
              responses:
                "200": {description: Ready, content: {application/json: {schema: {$ref: "#/components/schemas/Status"}}}}
                "503": {description: Not ready, content: {application/json: {schema: {$ref: "#/components/schemas/Status"}}}}
          /metrics:
            get:
              summary: Prometheus metrics (requests, auth failures, queue depth, pushes by outcome and reason, send latency, JWT age)
              responses:
                "200": {description: Prometheus text exposition format 0.0.4, content: {text/plain: {schema: {type: string}}}}
          /openapi.yaml:
            get:
              summary: This document
              responses:
                "200": {description: OpenAPI 3.1 YAML, content: {application/yaml: {schema: {type: string}}}}
          /v1/devices/register:
            post:
              summary: Register (or move) a device to the caller's pubkey
              security: [{nostr: []}]
              requestBody: {required: true, content: {application/json: {schema: {$ref: "#/components/schemas/Register"}}}}
              responses:
                "202": {description: Registered, content: {application/json: {schema: {$ref: "#/components/schemas/Status"}}}}
                "400": {$ref: "#/components/responses/BadRequest"}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "429": {$ref: "#/components/responses/RateLimited"}
                "500": {$ref: "#/components/responses/StorageError"}
                "503": {$ref: "#/components/responses/LookupFailed"}
          /v1/devices/unregister:
            post:
              summary: Remove one of the caller's devices
              security: [{nostr: []}]
              requestBody: {required: true, content: {application/json: {schema: {$ref: "#/components/schemas/Unregister"}}}}
              responses:
                "202": {description: Unregistered, content: {application/json: {schema: {$ref: "#/components/schemas/Status"}}}}
                "400": {$ref: "#/components/responses/BadRequest"}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "429": {$ref: "#/components/responses/RateLimited"}
                "500": {$ref: "#/components/responses/StorageError"}
          /v1/webpush/vapid-public-key:
            get:
              summary: The gateway's VAPID public key, a browser's applicationServerKey for pushManager.subscribe
              responses:
                "200":
                  description: The 65-byte uncompressed P-256 point, base64url without padding
                  content:
                    application/json:
                      schema: {type: object, required: [public_key], properties: {public_key: {type: string}}}
                "404": {description: Web Push is not enabled (VAPID_SUBJECT unset), content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
                "500": {$ref: "#/components/responses/StorageError"}
          /v1/devices:
            get:
              summary: The caller's devices
              security: [{nostr: []}]
              responses:
                "200": {description: Devices, content: {application/json: {schema: {$ref: "#/components/schemas/Devices"}}}}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "429": {$ref: "#/components/responses/RateLimited"}
                "500": {$ref: "#/components/responses/StorageError"}
          /v1/conversations/archive-state:
            put:
              summary: Replace (or, with known_conversation_ids, update) the caller's archived conversations
              security: [{nostr: []}]
              requestBody: {required: true, content: {application/json: {schema: {$ref: "#/components/schemas/ArchiveState"}}}}
              responses:
                "202": {description: Synced, content: {application/json: {schema: {$ref: "#/components/schemas/Status"}}}}
                "400": {$ref: "#/components/responses/BadRequest"}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "429": {$ref: "#/components/responses/RateLimited"}
                "500": {$ref: "#/components/responses/StorageError"}
          /v1/push:
            post:
              summary: Queue a typed push to the recipients' devices
              security: [{nostr: []}]
              requestBody: {required: true, content: {application/json: {schema: {$ref: "#/components/schemas/Push"}}}}
              responses:
                "202": {description: Accepted, content: {application/json: {schema: {$ref: "#/components/schemas/PushAccepted"}}}}
                "400": {$ref: "#/components/responses/BadRequest"}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "429": {$ref: "#/components/responses/RateLimited"}
                "500": {$ref: "#/components/responses/StorageError"}
          /v1/suppressions:
            post:
              summary: Do not push these gift wraps (the caller's own self-copies) to the caller's devices; kept for the two-day watch window
              security: [{nostr: []}]
              requestBody: {required: true, content: {application/json: {schema: {$ref: "#/components/schemas/Suppressions"}}}}
              responses:
                "202": {description: Suppressed, content: {application/json: {schema: {$ref: "#/components/schemas/Suppressed"}}}}
                "400": {$ref: "#/components/responses/BadRequest"}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "429": {$ref: "#/components/responses/RateLimited"}
                "500": {$ref: "#/components/responses/StorageError"}
          /v1/account:
            delete:
              summary: Erase everything stored for the caller
              security: [{nostr: []}]
              responses:
                "200": {description: Deleted, content: {application/json: {schema: {type: object}}}}
                "401": {$ref: "#/components/responses/Unauthorized"}
                "429": {$ref: "#/components/responses/RateLimited"}
                "500": {$ref: "#/components/responses/StorageError"}
          /admin/status:
            get:
              summary: >-
                Devices, queue depth, recent push failures of every platform (recent_push_failures,
                each with its platform, tokens redacted), configuration errors per platform
                (configuration_errors), relays, uptime
              security: [{admin: []}]
              responses:
                "200":
                  description: Status
                  content:
                    application/json:
                      schema:
                        type: object
                        properties:
                          recent_push_failures:
                            type: array
                            items:
                              type: object
                              properties:
                                at: {type: string, format: date-time}
                                platform: {type: string, enum: [apns, fcm, webpush, unifiedpush]}
                                status: {type: integer}
                                reason: {type: string}
                                outcome: {type: string}
                                device_token: {type: string, description: redacted}
                          configuration_errors:
                            type: object
                            description: By platform, since the instance started.
                            additionalProperties:
                              type: object
                              properties:
                                count: {type: integer}
                                last_reason: {type: string}
                                last_at: {type: string, format: date-time}
                "401": {description: Wrong or missing admin token, content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
                "404": {description: Admin routes disabled (no ADMIN_TOKEN), content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
                "429": {$ref: "#/components/responses/RateLimited"}
          /admin:
            get:
              summary: The operator's console, an HTML page that reloads itself; the sign-in form without a session
              security: [{admin: []}, {adminSession: []}]
              responses:
                "200": {description: The console, content: {text/html: {schema: {type: string}}}}
                "401": {description: No session; the sign-in form, content: {text/html: {schema: {type: string}}}}
                "404": {description: Admin routes disabled (no ADMIN_TOKEN), content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
                "429": {$ref: "#/components/responses/RateLimited"}
          /admin/login:
            post:
              summary: Signs a browser in to the console with the admin token; the session cookie lasts 12 hours
              requestBody:
                required: true
                content:
                  application/x-www-form-urlencoded:
                    schema: {type: object, properties: {token: {type: string}}, required: [token]}
              responses:
                "303": {description: Signed in; back to /admin with the session cookie, headers: {Set-Cookie: {schema: {type: string}}}}
                "400": {description: The form could not be read; the sign-in form, content: {text/html: {schema: {type: string}}}}
                "401": {description: Not the admin token; the sign-in form, content: {text/html: {schema: {type: string}}}}
                "404": {description: Admin routes disabled (no ADMIN_TOKEN), content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
                "429": {$ref: "#/components/responses/RateLimited"}
          /admin/logout:
            post:
              summary: Ends the browser's console session
              responses:
                "303": {description: Signed out; back to /admin with the cookie cleared}
                "404": {description: Admin routes disabled (no ADMIN_TOKEN), content: {application/json: {schema: {$ref: "#/components/schemas/Error"}}}}
                "429": {$ref: "#/components/responses/RateLimited"}

        """
}
