-- Every queued push paid for push_jobs' foreign key: a row trigger that looked the device up and
-- took a FOR KEY SHARE lock on it (a write to the device's page), about 15 µs per job, 12 % of a
-- relay-watch batch's time. What the key gave is kept without it:
-- - a device's jobs still go with the device: the trigger below does what ON DELETE CASCADE did,
--   through the same index (push_jobs_device_idx);
-- - a job queued for a device deleted in the same instant (the key made that statement fail and
--   its whole batch with it) is now left behind, and the claim drops it, since it already drops
--   any job whose device is gone or belongs to someone else (DeliveryQueue.claim).
ALTER TABLE push_jobs DROP CONSTRAINT IF EXISTS push_jobs_device_token_fkey;

CREATE FUNCTION linkstr_drop_device_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM push_jobs WHERE device_token = OLD.device_token;
    RETURN NULL;
END $$;
CREATE TRIGGER devices_drop_jobs AFTER DELETE ON devices
    FOR EACH ROW EXECUTE FUNCTION linkstr_drop_device_jobs();
