-- A batch's arrays of device tokens, apns-ids and wrap ids are mostly random (APNs tokens and
-- wrap ids are random hex, apns-ids random bytes), which PostgreSQL's compression cannot shrink:
-- every batch over 2 kB tried anyway, then moved the arrays to the TOAST table, a row and an
-- index entry per 2 kB written and deleted with each batch. EXTERNAL skips the compression
-- attempt, and a batch row of up to 8 kB (a batch of about 30 gift-wrap pushes) now stays whole
-- in its page; only a larger one moves arrays out of line.
-- pubkeys keep the default: a typed push's batch repeats each recipient's pubkey per device,
-- which does compress.
ALTER TABLE push_batches
    ALTER COLUMN device_tokens SET STORAGE EXTERNAL,
    ALTER COLUMN apns_ids SET STORAGE EXTERNAL,
    ALTER COLUMN event_ids SET STORAGE EXTERNAL,
    SET (toast_tuple_target = 8160);
