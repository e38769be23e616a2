-- A job inserted already leased for its instance's direct delivery (the relay watcher's, and
-- POST /v1/push's while under DELIVERY_DIRECT_LIMIT) is sent at once and deleted moments later.
-- Entering it into push_jobs_device_idx was the costliest write of a queued push: the key is a
-- random device token, so every insert lands on a different leaf page (a page read, often a
-- full-page image in the WAL after a checkpoint, page splits), for an entry nothing looks up
-- before the row is gone.
--
-- The index now holds only jobs queued for the delivery loops (`direct` false). What looked
-- jobs up by device is unchanged for those; for a direct job it is not needed:
-- - coalescing merges only into unclaimed jobs, and a direct job is claimed from the start;
-- - a device removed, a token moved to another pubkey or a conversation archived while a direct
--   job is in flight: the send was going out anyway (deleting the row never stopped it); if it
--   fails and is released for a retry, or its instance dies and the lease runs out, the claim
--   drops it, since the claim already drops any job whose device is gone, belongs to someone
--   else or whose conversation is archived (DeliveryQueue.claim).
-- `direct` is set at insert and never changed, so the claim's lease update stays a HOT update.
ALTER TABLE push_jobs ADD COLUMN direct boolean NOT NULL DEFAULT false;

CREATE INDEX push_jobs_queued_device_idx ON push_jobs (device_token) WHERE NOT direct;
DROP INDEX push_jobs_device_idx;

CREATE OR REPLACE FUNCTION linkstr_drop_device_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM push_jobs WHERE device_token = OLD.device_token AND NOT direct;
    RETURN NULL;
END $$;
