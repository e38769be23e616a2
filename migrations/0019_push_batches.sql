-- A typed push (POST /v1/push) is stored as one row for the whole request, not one job per
-- device: its payload once, and its devices, their owners and their apns-ids as three aligned
-- arrays. A 500-recipient push wrote 500 job rows (heap, primary key and claim index entries,
-- then a lease update and a delete for each); it now writes one row and deletes it.
--
-- A batch is claimed, leased and finished as a whole. Its members are joined with `devices` and
-- `archived_conversations` when it is claimed, so a device removed, moved to another pubkey, or
-- registered again (`registered_at` after the batch's `created_at`) since the push was queued
-- is skipped, as its queued job would have been deleted. Archiving a conversation and erasing an
-- account take the owner's devices out of the batches at once. A member whose push service asks for a retry becomes an ordinary job
-- in `push_jobs` (same apns-id, attempt count and expiry) in the statement that deletes the
-- batch.
--
-- Like a job, a batch's `next_attempt_at` is its lease's end while it is leased; `attempts`
-- fences a finish against a newer claim after the lease ran out.
CREATE TABLE push_batches (
    id                bigserial PRIMARY KEY,
    notification_type text NOT NULL,
    event_id          text NOT NULL,
    conversation_id   text NOT NULL,
    emoji             text,
    post_id           text,
    background        boolean NOT NULL DEFAULT false,
    device_tokens     text[] NOT NULL,
    pubkeys           text[] NOT NULL,
    apns_ids          uuid[] NOT NULL,
    -- How many devices: the queue's depth is read without detoasting the arrays.
    size              integer NOT NULL,
    attempts          integer NOT NULL DEFAULT 0,
    next_attempt_at   timestamptz NOT NULL DEFAULT now(),
    expires_at        timestamptz NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    CHECK (cardinality(device_tokens) = size AND cardinality(pubkeys) = size AND cardinality(apns_ids) = size)
);
CREATE INDEX push_batches_claim_idx ON push_batches (next_attempt_at);
-- Archiving a conversation takes the owner's devices out of its queued batches.
CREATE INDEX push_batches_conversation_idx ON push_batches (conversation_id);

-- Every push waiting to be sent or in flight, one row per device, from both tables: the view
-- operators (and tests) count pending pushes with. A batch member shows only while its device
-- still belongs to its pubkey (registered there before the push was queued) and the conversation
-- is not archived, which is when a claim would send it. A batch's `locked_until` is its lease's
-- end once it has been claimed, as for a job. The view reads columns of both tables: a later
-- migration that changes one of them drops the view and creates it again.
CREATE VIEW push_queue AS
    SELECT 'job'::text AS source, j.id, j.apns_id, j.device_token, j.pubkey, j.notification_type, j.event_id, j.conversation_id,
           j.emoji, j.post_id, j.background, j.relay, j.wrap_count, j.attempts, j.next_attempt_at, j.locked_until, j.expires_at,
           j.last_error, j.created_at
    FROM push_jobs j
    UNION ALL
    SELECT 'batch', b.id, m.apns_id, m.device_token, m.pubkey, b.notification_type, b.event_id, b.conversation_id,
           b.emoji, b.post_id, b.background, NULL, 1, b.attempts, b.next_attempt_at,
           CASE WHEN b.attempts > 0 THEN b.next_attempt_at END, b.expires_at, NULL, b.created_at
    FROM push_batches b
    CROSS JOIN LATERAL unnest(b.device_tokens, b.pubkeys, b.apns_ids) AS m(device_token, pubkey, apns_id)
    WHERE EXISTS (SELECT 1 FROM devices d WHERE d.device_token = m.device_token AND d.pubkey = m.pubkey AND d.registered_at <= b.created_at)
      AND NOT EXISTS (SELECT 1 FROM archived_conversations a WHERE a.pubkey = m.pubkey AND a.conversation_id = b.conversation_id);
