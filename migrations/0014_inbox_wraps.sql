-- The gateway as a NIP-17 inbox relay (INBOX_RELAY=1): gift wraps to registered recipients, kept
-- for INBOX_RETENTION_DAYS and served only to their recipient after NIP-42 AUTH. A wrap is stored
-- once, whoever sends it again. Deleted with the recipient's last device, on the recipient's
-- request to vanish (kind 62), and past the retention.
CREATE TABLE inbox_wraps (
    id         text PRIMARY KEY,
    recipient  text NOT NULL,
    created_at bigint NOT NULL,
    event      text NOT NULL,
    stored_at  timestamptz NOT NULL DEFAULT now()
);
-- A REQ reads one recipient's wraps newest first, bounded by since and until.
CREATE INDEX inbox_wraps_recipient_idx ON inbox_wraps (recipient, created_at DESC);
CREATE INDEX inbox_wraps_stored_idx ON inbox_wraps (stored_at);
