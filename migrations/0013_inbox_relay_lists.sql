-- Each watched user's NIP-17 DM relay list (kind 10050), as the relay watcher last found it on
-- INDEXER_RELAYS: the newest by created_at, the lower event id on a tie (NIP-01's rule for
-- replaceable events). Kept so that a restart or a shard takeover watches the right relays at once
-- and so that GET /v1/devices can say where a user is watched. Rows of users with no relay-watch
-- device are pruned.
CREATE TABLE inbox_relay_lists (
    pubkey     text PRIMARY KEY,
    event_id   text NOT NULL,
    created_at bigint NOT NULL,
    relays     text[] NOT NULL,
    stored_at  timestamptz NOT NULL DEFAULT now()
);

-- What each watcher instance knows of the relays it connects to beyond RELAYS, for GET
-- /v1/devices: 'watching', 'auth-required', 'refused', 'unreachable' or 'over-limit'. Rows of an
-- instance go when it releases its shards, and with it when it stops heartbeating.
CREATE TABLE watch_relay_states (
    instance_id text NOT NULL,
    url         text NOT NULL,
    state       text NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (instance_id, url)
);

-- A registration that changes only its relays changes where its pubkey is watched: the watchers
-- are told, as for the other changes.
DROP TRIGGER devices_watch_update ON devices;
CREATE TRIGGER devices_watch_update AFTER UPDATE ON devices
    FOR EACH ROW WHEN ((OLD.relay_watch OR NEW.relay_watch)
                       AND (OLD.relay_watch IS DISTINCT FROM NEW.relay_watch OR OLD.pubkey IS DISTINCT FROM NEW.pubkey
                            OR OLD.relays IS DISTINCT FROM NEW.relays))
    EXECUTE FUNCTION linkstr_notify_watch();
