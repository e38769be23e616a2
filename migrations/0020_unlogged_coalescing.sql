-- Coalescing windows (when each device may get its next relay-watch or inbox push) are rewritten
-- by every push, and are worth no WAL: three of the fifteen WAL records a stored inbox wrap wrote
-- were this table's row and its key. UNLOGGED: after a crash PostgreSQL empties it, and each
-- device may get one push that would otherwise have been coalesced; a standby does not have it
-- either, with the same effect after a failover.
--
-- fillfactor first, so that the rewrite SET UNLOGGED makes leaves room on every page: a window
-- moved is then a HOT update, with no new entry in the primary key.
ALTER TABLE watch_coalesce SET (fillfactor = 50);
ALTER TABLE watch_coalesce SET UNLOGGED;
