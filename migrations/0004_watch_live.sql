-- Which watched pubkeys each relay has already served live (their subscription reached EOSE
-- there). An instance that takes a shard over reads this: wraps for these pubkeys that nobody
-- claimed yet arrived while the shard had no watcher (a crash, a deploy, a rebalance) and are
-- pushed; for pubkeys not in it, everything before EOSE is history. Rows go when the pubkey is no
-- longer watched.
CREATE TABLE watch_live (
    pubkey     TEXT NOT NULL,
    relay      TEXT NOT NULL,
    live_since TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (pubkey, relay)
);
