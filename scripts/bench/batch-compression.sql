-- What storing a gift-wrap batch costs with each compression method for `push_batches`' two
-- compressible arrays (migration 0025): 400 batches of 254 members, the watcher's largest, each
-- written twice into a copy of the table with pglz and one with lz4, timed by psql. Run on a
-- migrated database:
--   psql -h 127.0.0.1 -p PORT -U linkstr linkstr -f scripts/bench/batch-compression.sql
-- The copies are dropped at the end.
\set ON_ERROR_STOP on
CREATE TABLE bench_batches_pglz (LIKE push_batches INCLUDING DEFAULTS INCLUDING STORAGE INCLUDING COMPRESSION)
    WITH (toast_tuple_target = 8160);
CREATE TABLE bench_batches_lz4 (LIKE push_batches INCLUDING DEFAULTS INCLUDING STORAGE INCLUDING COMPRESSION)
    WITH (toast_tuple_target = 8160);
ALTER TABLE bench_batches_pglz ALTER COLUMN pubkeys SET COMPRESSION pglz, ALTER COLUMN relays SET COMPRESSION pglz;
ALTER TABLE bench_batches_lz4 ALTER COLUMN pubkeys SET COMPRESSION lz4, ALTER COLUMN relays SET COMPRESSION lz4;
-- The members, made once: random hex tokens, pubkeys and wrap ids, one relay.
CREATE TEMP TABLE bench_members AS
SELECT b, array_agg(encode(sha256(('t' || b || '.' || i)::bytea), 'hex')) AS tokens,
       array_agg(encode(sha256(('p' || b || '.' || i)::bytea), 'hex')) AS pubkeys,
       array_agg(gen_random_uuid()) AS apns_ids, array_agg(encode(sha256(('w' || b || '.' || i)::bytea), 'hex')) AS wraps,
       array_agg('wss://relay.example.com'::text) AS relays, array_agg(1) AS counts
FROM generate_series(1, 400) AS b, generate_series(1, 254) AS i GROUP BY b;
-- The same columns and rows for every write; only the table differs.
\set columns '(notification_type, event_id, conversation_id, device_tokens, pubkeys, apns_ids, event_ids, relays, wrap_counts, size, expires_at)'
\set rows 'SELECT ''gift_wrap'', '''', '''', tokens, pubkeys, apns_ids, wraps, relays, counts, 254, now() + interval ''1 hour'' FROM bench_members'
\timing on
\echo pglz, then lz4, twice:
INSERT INTO bench_batches_pglz :columns :rows;
INSERT INTO bench_batches_lz4 :columns :rows;
INSERT INTO bench_batches_pglz :columns :rows;
INSERT INTO bench_batches_lz4 :columns :rows;
\timing off
SELECT 'pglz' AS method, pg_size_pretty(pg_total_relation_size('bench_batches_pglz')) AS stored
UNION ALL SELECT 'lz4', pg_size_pretty(pg_total_relation_size('bench_batches_lz4'));
DROP TABLE bench_batches_pglz, bench_batches_lz4;
