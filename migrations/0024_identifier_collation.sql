-- The gateway's identifiers (hex keys and ids, device tokens, relay URLs, the names of kinds and
-- states) compare byte by byte, whatever the database's default collation. On a database created
-- with a linguistic locale (en_US.UTF-8, the default of many installations and hosted services)
-- every sort, index descent and join on them went through the locale's collation instead, and the
-- statements that queue pushes sort hundreds of such keys each: PostgreSQL's CPU a push doubled
-- (docs/performance.md). Equality is the same in both collations, so no row, key or lookup changes
-- meaning; only the order of keys does. Nothing depends on it but a tie in the eviction of
-- devices past the cap (two devices of a pubkey updated in the same microsecond), which may now
-- go the other way.
--
-- Changing a column's collation rebuilds the indexes on it (not the table), under an exclusive
-- lock on the table until the migration commits (docs/operations.md). The two views and the
-- trigger that name these columns are made again as they were.
--
-- Every table and view is locked first, in one statement, waiting at most 2 s for each. Taken one
-- ALTER at a time, the migration would hold `devices` (its indexes rebuilding) while waiting for
-- `push_jobs`, behind a claim that holds `push_jobs` and waits for `devices`: a deadlock. Past
-- a wait, or in a deadlock all the same, the migration is rolled back, the statements it held up
-- go on, and it is tried again (`Migrator`).
SET LOCAL lock_timeout = '2s';
LOCK TABLE push_queue, device_budgets, auth_replays, seen_wraps, push_jobs, push_batches, push_dedupe, archived_conversations,
    push_suppressions, inbox_wraps, inbox_relay_lists, device_pacing, watch_coalesce, devices, watch_live, watch_instances,
    watch_relay_states, watch_shards
    IN ACCESS EXCLUSIVE MODE;
DROP VIEW push_queue;
DROP VIEW device_budgets;
DROP TRIGGER devices_watch_update ON devices;

ALTER TABLE devices
    ALTER COLUMN device_token TYPE text COLLATE "C",
    ALTER COLUMN pubkey TYPE text COLLATE "C",
    ALTER COLUMN apns_environment TYPE text COLLATE "C",
    ALTER COLUMN topic TYPE text COLLATE "C",
    ALTER COLUMN platform TYPE text COLLATE "C",
    ALTER COLUMN push_type TYPE text COLLATE "C",
    ALTER COLUMN relays TYPE text[] COLLATE "C";
ALTER TABLE device_pacing ALTER COLUMN device_token TYPE text COLLATE "C";
ALTER TABLE watch_coalesce ALTER COLUMN device_token TYPE text COLLATE "C";
ALTER TABLE archived_conversations
    ALTER COLUMN pubkey TYPE text COLLATE "C",
    ALTER COLUMN conversation_id TYPE text COLLATE "C";
ALTER TABLE auth_replays
    ALTER COLUMN pubkey TYPE text COLLATE "C",
    ALTER COLUMN replay_key TYPE text COLLATE "C";
ALTER TABLE inbox_relay_lists
    ALTER COLUMN pubkey TYPE text COLLATE "C",
    ALTER COLUMN event_id TYPE text COLLATE "C",
    ALTER COLUMN relays TYPE text[] COLLATE "C";
ALTER TABLE inbox_wraps
    ALTER COLUMN id TYPE text COLLATE "C",
    ALTER COLUMN recipient TYPE text COLLATE "C";
ALTER TABLE push_batches
    ALTER COLUMN notification_type TYPE text COLLATE "C",
    ALTER COLUMN event_id TYPE text COLLATE "C",
    ALTER COLUMN conversation_id TYPE text COLLATE "C",
    ALTER COLUMN post_id TYPE text COLLATE "C",
    ALTER COLUMN device_tokens TYPE text[] COLLATE "C",
    ALTER COLUMN pubkeys TYPE text[] COLLATE "C",
    ALTER COLUMN event_ids TYPE text[] COLLATE "C",
    ALTER COLUMN relays TYPE text[] COLLATE "C";
-- A new type takes its default storage: the random arrays go back to being stored uncompressed,
-- as migration 0022 set them.
ALTER TABLE push_batches
    ALTER COLUMN device_tokens SET STORAGE EXTERNAL,
    ALTER COLUMN event_ids SET STORAGE EXTERNAL;
ALTER TABLE push_dedupe
    ALTER COLUMN recipient TYPE text COLLATE "C",
    ALTER COLUMN notification_type TYPE text COLLATE "C",
    ALTER COLUMN event_id TYPE text COLLATE "C";
ALTER TABLE push_jobs
    ALTER COLUMN device_token TYPE text COLLATE "C",
    ALTER COLUMN pubkey TYPE text COLLATE "C",
    ALTER COLUMN notification_type TYPE text COLLATE "C",
    ALTER COLUMN event_id TYPE text COLLATE "C",
    ALTER COLUMN conversation_id TYPE text COLLATE "C",
    ALTER COLUMN post_id TYPE text COLLATE "C",
    ALTER COLUMN relay TYPE text COLLATE "C";
ALTER TABLE push_suppressions
    ALTER COLUMN pubkey TYPE text COLLATE "C",
    ALTER COLUMN event_id TYPE text COLLATE "C";
ALTER TABLE seen_wraps ALTER COLUMN wrap_id TYPE text COLLATE "C";
ALTER TABLE watch_instances ALTER COLUMN instance_id TYPE text COLLATE "C";
ALTER TABLE watch_live
    ALTER COLUMN pubkey TYPE text COLLATE "C",
    ALTER COLUMN relay TYPE text COLLATE "C";
ALTER TABLE watch_relay_states
    ALTER COLUMN instance_id TYPE text COLLATE "C",
    ALTER COLUMN url TYPE text COLLATE "C",
    ALTER COLUMN state TYPE text COLLATE "C";
ALTER TABLE watch_shards ALTER COLUMN owner TYPE text COLLATE "C";

-- A column whose collation changes loses its planner statistics, and the plans that rely on them
-- (migration 0018, `DevicePlanTests`) need them back before the first statement: each table that
-- had been analyzed is analyzed again. One never analyzed stays so (an empty table analyzed would
-- be planned as empty, not as the few pages the planner assumes until then).
DO $$
DECLARE
    altered regclass;
BEGIN
    FOR altered IN
        SELECT oid::regclass FROM pg_class
        WHERE relname IN ('devices', 'device_pacing', 'watch_coalesce', 'archived_conversations', 'auth_replays', 'inbox_relay_lists',
                          'inbox_wraps', 'push_batches', 'push_dedupe', 'push_jobs', 'push_suppressions', 'seen_wraps', 'watch_instances',
                          'watch_live', 'watch_relay_states', 'watch_shards')
          AND relnamespace = current_schema()::regnamespace AND reltuples >= 0
    LOOP
        EXECUTE format('ANALYZE %s', altered);
    END LOOP;
END $$;

-- As migration 0013 made it.
CREATE TRIGGER devices_watch_update AFTER UPDATE ON devices
    FOR EACH ROW WHEN ((OLD.relay_watch OR NEW.relay_watch)
                       AND (OLD.relay_watch IS DISTINCT FROM NEW.relay_watch OR OLD.pubkey IS DISTINCT FROM NEW.pubkey
                            OR OLD.relays IS DISTINCT FROM NEW.relays))
    EXECUTE FUNCTION linkstr_notify_watch();

-- As migration 0023 made it, for the release before during a rolling deploy.
CREATE VIEW device_budgets AS SELECT device_token, tokens, updated_at FROM device_pacing;
CREATE RULE device_budgets_prune AS ON DELETE TO device_budgets DO INSTEAD
    DELETE FROM device_pacing p WHERE p.device_token = OLD.device_token AND (p.next_at IS NULL OR p.next_at <= now())
    RETURNING p.device_token, p.tokens, p.updated_at;

-- As migration 0021 made it.
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
