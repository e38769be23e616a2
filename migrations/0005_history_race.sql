-- A wrap claimed only by a relay's history (before that subscription's EOSE) may be the same new
-- wrap another relay forwards in real time a moment later: until history_until, a real-time
-- sighting takes the claim over and pushes it. NULL for wraps claimed live (or taken over).
ALTER TABLE seen_wraps ADD COLUMN history_until TIMESTAMPTZ;
