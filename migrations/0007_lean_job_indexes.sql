-- Every job insert wrote four index entries. The (pubkey, conversation_id) index served only two
-- rare deletes: an archive update now reaches the jobs through the owner's devices and the device
-- index (which the foreign key's cascade needs anyway), and an account erasure scans the queue,
-- which is small by design (jobs expire after 15 minutes). One index entry fewer per queued push.
DROP INDEX IF EXISTS push_jobs_conversation_idx;

-- The dedupe key leads with the recipient, so erasing an account finds its rows through the key
-- instead of scanning 30 days of dedupe rows. Lookups use the whole key, so the order costs
-- nothing on the hot path.
ALTER TABLE push_dedupe DROP CONSTRAINT push_dedupe_pkey;
ALTER TABLE push_dedupe ADD PRIMARY KEY (recipient, event_id, notification_type);
