-- Workers claim jobs in (next_attempt_at, id) order with LIMIT … FOR UPDATE SKIP LOCKED. With an
-- index in exactly that order the claim reads only the head of the queue; without it PostgreSQL
-- sorted the whole queue on every claim (74 ms per claim with 50,000 jobs queued, 5 ms with it).
CREATE INDEX push_jobs_claim_idx ON push_jobs (next_attempt_at, id);
DROP INDEX push_jobs_due_idx;
