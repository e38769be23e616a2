-- Each device's alert budget (PUSH_DEVICE_BUDGET): a token bucket per device token, refilled at
-- a fixed rate up to its burst. A device without a row has a full bucket. The statements that
-- queue a push (a typed push, a relay-watch wrap) take a token in the same statement, and a push
-- over the budget is never queued.
--
-- UNLOGGED: every push writes its device's row, and a budget is worth no WAL. After a crash
-- PostgreSQL empties the table, which hands every device a full bucket once; that is the whole
-- cost. Rows that are full again are pruned by maintenance; fillfactor leaves room for HOT updates.
CREATE UNLOGGED TABLE device_budgets (
    device_token text PRIMARY KEY,
    tokens double precision NOT NULL,
    updated_at timestamptz NOT NULL
) WITH (fillfactor = 50);
