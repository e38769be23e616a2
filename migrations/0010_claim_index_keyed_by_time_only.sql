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
-- The claim reads the head of the queue in `next_attempt_at` order alone (no sort under any
-- statistics); jobs due at the same instant come in index order.
--
-- The drop comes first: it takes the strongest lock at once. Building first (a SHARE lock) and
-- then dropping would upgrade the lock while delivery loops wait behind it, a deadlock with any
-- claim that started in between. Writes to the queue wait for the build either way.
DROP INDEX push_jobs_claim_idx;
CREATE INDEX push_jobs_claim_idx ON push_jobs (next_attempt_at);
