-- A gift-wrap push that is sent at once (the relay watcher's and the inbox relay's, due now and
-- leased to the instance that queued it) is stored as one batch row per statement instead of one
-- job row per device: each member's wrap id, relay and coalesced wrap count as three more arrays
-- aligned with the devices. Such a job row lived for one send: a heap tuple, two index entries
-- and a delete per push, in the same transaction as the wrap's own rows.
--
-- The arrays are NULL on a typed push's batch, whose members share the batch's payload. A member
-- of a gift-wrap batch that is to be retried becomes a job of its own in `push_jobs`, with its
-- own wrap id, relay and count, as a typed push's member does. Jobs that wait (a coalescing
-- window, or direct delivery at its limit) stay in `push_jobs`, where a later wrap merges into
-- them.
ALTER TABLE push_batches
    ADD COLUMN event_ids text[],
    ADD COLUMN relays text[],
    ADD COLUMN wrap_counts integer[],
    -- All three or none, each as long as the devices. Spelled out: a CHECK passes when it is
    -- NULL, and the cardinality of a NULL array is NULL.
    ADD CHECK (
        (event_ids IS NULL) = (relays IS NULL) AND (event_ids IS NULL) = (wrap_counts IS NULL)
        AND (event_ids IS NULL OR (cardinality(event_ids) = size AND cardinality(relays) = size AND cardinality(wrap_counts) = size)));

-- The view of every pending push shows a gift-wrap member's own wrap id, relay and count.
DROP VIEW push_queue;
CREATE VIEW push_queue AS
    SELECT 'job'::text AS source, j.id, j.apns_id, j.device_token, j.pubkey, j.notification_type, j.event_id, j.conversation_id,
           j.emoji, j.post_id, j.background, j.relay, j.wrap_count, j.attempts, j.next_attempt_at, j.locked_until, j.expires_at,
           j.last_error, j.created_at
    FROM push_jobs j
    UNION ALL
    SELECT 'batch', b.id, m.apns_id, m.device_token, m.pubkey, b.notification_type, coalesce(m.event_id, b.event_id), b.conversation_id,
           b.emoji, b.post_id, b.background, m.relay, coalesce(m.wrap_count, 1), b.attempts, b.next_attempt_at,
           CASE WHEN b.attempts > 0 THEN b.next_attempt_at END, b.expires_at, NULL, b.created_at
    FROM push_batches b
    CROSS JOIN LATERAL unnest(b.device_tokens, b.pubkeys, b.apns_ids, b.event_ids, b.relays, b.wrap_counts)
        AS m(device_token, pubkey, apns_id, event_id, relay, wrap_count)
    WHERE EXISTS (SELECT 1 FROM devices d WHERE d.device_token = m.device_token AND d.pubkey = m.pubkey AND d.registered_at <= b.created_at)
      AND NOT EXISTS (SELECT 1 FROM archived_conversations a WHERE a.pubkey = m.pubkey AND a.conversation_id = b.conversation_id);
