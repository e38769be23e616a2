-- The gateway's VAPID key (RFC 8292) for Web Push and UnifiedPush, generated on first use when
-- VAPID_PRIVATE_KEY is unset, so every instance signs with the same key and browsers keep their
-- subscriptions across restarts. A base64url P-256 scalar.
CREATE TABLE vapid_key (
    singleton   BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
    private_key TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
