-- The relay watcher (issue #4).

-- The gateway's own Nostr key, used to answer NIP-42 AUTH challenges. Generated on first start
-- when GATEWAY_NSEC is unset, so every instance answers with the same identity.
CREATE TABLE gateway_identity (
    singleton  BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
    secret_key TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Which instance watches which shard of the pubkey space. A lease that is not renewed expires and
-- another instance takes the shard over.
CREATE TABLE watch_shards (
    shard      INTEGER PRIMARY KEY,
    owner      TEXT,
    expires_at TIMESTAMPTZ NOT NULL DEFAULT '-infinity'
);

-- Instances that are alive, so each can compute its fair share of the shards.
CREATE TABLE watch_instances (
    instance_id  TEXT PRIMARY KEY,
    heartbeat_at TIMESTAMPTZ NOT NULL
);

-- Every gift wrap the watcher has seen (history included), shared by all instances: a wrap
-- claimed here once is never pushed again, whichever relay or instance sees it next. Kept longer
-- than the two-day watch window.
CREATE TABLE seen_wraps (
    wrap_id TEXT PRIMARY KEY,
    seen_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX seen_wraps_seen_idx ON seen_wraps (seen_at);

-- Wraps a client asked not to be pushed to its own devices (its self-copies).
CREATE TABLE push_suppressions (
    pubkey     TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (pubkey, event_id)
);
CREATE INDEX push_suppressions_expires_idx ON push_suppressions (expires_at);

-- When each device may get its next relay-watch push (one per WATCH_COALESCE_SECONDS).
CREATE TABLE watch_coalesce (
    device_token TEXT PRIMARY KEY REFERENCES devices (device_token) ON DELETE CASCADE,
    next_at      TIMESTAMPTZ NOT NULL
);

-- Relay-watch jobs carry where the wrap was seen and how many wraps they stand for.
ALTER TABLE push_jobs ADD COLUMN relay TEXT;
ALTER TABLE push_jobs ADD COLUMN wrap_count INTEGER NOT NULL DEFAULT 1;

-- Watched pubkeys are read by shard; the shard of a pubkey is its first 32 bits modulo the shard
-- count (pubkeys are uniformly distributed already). WatchShard.swift computes the same.
CREATE FUNCTION linkstr_watch_shard(pubkey TEXT, shards INTEGER) RETURNS INTEGER
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT (('x' || substr(pubkey, 1, 8))::bit(32)::bigint % shards)::integer $$;
CREATE INDEX devices_watch_idx ON devices (pubkey) WHERE relay_watch;

-- Registrations and removals reach the watchers within a second: every change to the set of
-- watching devices notifies channel linkstr_watch with the pubkey concerned.
CREATE FUNCTION linkstr_notify_watch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN PERFORM pg_notify('linkstr_watch', OLD.pubkey); END IF;
    IF TG_OP <> 'DELETE' THEN PERFORM pg_notify('linkstr_watch', NEW.pubkey); END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER devices_watch_insert AFTER INSERT ON devices
    FOR EACH ROW WHEN (NEW.relay_watch) EXECUTE FUNCTION linkstr_notify_watch();
CREATE TRIGGER devices_watch_delete AFTER DELETE ON devices
    FOR EACH ROW WHEN (OLD.relay_watch) EXECUTE FUNCTION linkstr_notify_watch();
CREATE TRIGGER devices_watch_update AFTER UPDATE ON devices
    FOR EACH ROW WHEN ((OLD.relay_watch OR NEW.relay_watch)
                       AND (OLD.relay_watch IS DISTINCT FROM NEW.relay_watch OR OLD.pubkey IS DISTINCT FROM NEW.pubkey))
    EXECUTE FUNCTION linkstr_notify_watch();
