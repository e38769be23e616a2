-- A device's alert budget and its coalescing window become one row, `device_pacing`: the
-- statements that queue relay-watch and inbox pushes read the window, charge the budget and move
-- the window in one upsert of that row, instead of a read of `watch_coalesce`, an upsert of
-- `device_budgets` and an upsert of `watch_coalesce` per push (about 10 of 60 µs of PostgreSQL
-- CPU a wrap, the record statement measured alone).
--
-- The row is unlogged, like both tables before it, and pruned by maintenance once it says
-- nothing: its bucket is full again and its window has passed.
ALTER TABLE device_budgets RENAME TO device_pacing;
ALTER INDEX device_budgets_pkey RENAME TO device_pacing_pkey;
-- When the device may get its next relay-watch or inbox push; NULL: at once.
ALTER TABLE device_pacing ADD COLUMN next_at timestamptz;

-- Windows still open move over. A device without a budget row gets a full bucket: `epoch` as its
-- last charge refills any burst.
INSERT INTO device_pacing (device_token, tokens, updated_at, next_at)
SELECT device_token, 0, 'epoch', next_at FROM watch_coalesce WHERE next_at > now()
ON CONFLICT (device_token) DO UPDATE SET next_at = EXCLUDED.next_at;

-- For the release before, while a rolling deploy runs it beside this one: its budget charge, read
-- and prune reach the renamed table through a view of the old columns (PostgreSQL writes through
-- a simple view, `INSERT … ON CONFLICT` included), and it keeps its coalescing windows in
-- `watch_coalesce`, which this release no longer reads or writes. A later release drops both.
CREATE VIEW device_budgets AS SELECT device_token, tokens, updated_at FROM device_pacing;
-- Its prune knows only the budget: a row whose window is still open stays.
CREATE RULE device_budgets_prune AS ON DELETE TO device_budgets DO INSTEAD
    DELETE FROM device_pacing p WHERE p.device_token = OLD.device_token AND (p.next_at IS NULL OR p.next_at <= now())
    RETURNING p.device_token, p.tokens, p.updated_at;
