-- From when a shard's pubkeys may have gift wraps that no watcher saw, while the instance that took
-- the shard over has not caught up (not every REQ of its pubkeys live under the previous owner has
-- reached EOSE). Set by the take, to the previous owner's stop or an older value inherited; cleared
-- by the owner's heartbeat once it has caught up. An instance that takes the shard from an owner
-- that died or left before catching up reaches back from here, not from that owner's stop.
ALTER TABLE watch_shards ADD COLUMN resume_from TIMESTAMPTZ;
