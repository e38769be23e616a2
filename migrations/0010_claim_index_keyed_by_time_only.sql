-- The claim index keeps only `next_attempt_at`: with `id` as its second column, PostgreSQL could
-- use it for a look-up by id alone, by reading the whole index.
--
-- The queue drains between bursts. An autovacuum that finds it empty records one row in a table
-- (and indexes) still hundreds of pages long, and on those figures the planner costs an index
-- read at one page whatever its size. Deleting finished jobs by id was then planned as a bitmap
-- scan of this index (a condition on its second column: every entry, dead ones of the last burst
-- included) instead of a probe of the primary key: 0.5-1 s a delete instead of 0.1 ms. The relay
-- watcher's benchmark saw 10-50 s of backlog until the next ANALYZE (tests: QueuePlanTests).
--
-- The claim still reads only the head of the queue: an index scan in `next_attempt_at` order,
-- and an incremental sort puts jobs due at the same instant in id order.
CREATE INDEX push_jobs_claim_time_idx ON push_jobs (next_attempt_at);
DROP INDEX push_jobs_claim_idx;
ALTER INDEX push_jobs_claim_time_idx RENAME TO push_jobs_claim_idx;
