-- Devices registered by Nostr pubkeys (hex), one row per APNs device token.
CREATE TABLE devices (
    device_token     TEXT PRIMARY KEY,
    pubkey           TEXT NOT NULL,
    apns_environment TEXT NOT NULL CHECK (apns_environment IN ('sandbox', 'production')),
    topic            TEXT NOT NULL,
    relay_watch      BOOLEAN NOT NULL DEFAULT FALSE,
    registered_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX devices_pubkey_idx ON devices (pubkey);

-- Archived conversations per pubkey; kept only while the pubkey has a device.
CREATE TABLE archived_conversations (
    pubkey          TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    PRIMARY KEY (pubkey, conversation_id)
);

-- Single-use authorization keys (linkstr nonces, NIP-98 event ids) within the skew window.
CREATE TABLE auth_replays (
    pubkey     TEXT NOT NULL,
    replay_key TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (pubkey, replay_key)
);
CREATE INDEX auth_replays_expires_idx ON auth_replays (expires_at);

-- Push dedupe per (event, type, recipient), kept 30 days.
CREATE TABLE push_dedupe (
    event_id          TEXT NOT NULL,
    notification_type TEXT NOT NULL,
    recipient         TEXT NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (event_id, notification_type, recipient)
);
CREATE INDEX push_dedupe_created_idx ON push_dedupe (created_at);

-- The durable delivery queue: one job per device. Deleting the device cancels its jobs.
CREATE TABLE push_jobs (
    id                BIGSERIAL PRIMARY KEY,
    apns_id           UUID NOT NULL,
    device_token      TEXT NOT NULL REFERENCES devices (device_token) ON DELETE CASCADE,
    pubkey            TEXT NOT NULL,
    notification_type TEXT NOT NULL,
    event_id          TEXT NOT NULL,
    conversation_id   TEXT NOT NULL,
    emoji             TEXT,
    post_id           TEXT,
    attempts          INTEGER NOT NULL DEFAULT 0,
    next_attempt_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    locked_until      TIMESTAMPTZ,
    expires_at        TIMESTAMPTZ NOT NULL,
    last_error        TEXT,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX push_jobs_due_idx ON push_jobs (next_attempt_at);
CREATE INDEX push_jobs_device_idx ON push_jobs (device_token);
CREATE INDEX push_jobs_conversation_idx ON push_jobs (pubkey, conversation_id);
