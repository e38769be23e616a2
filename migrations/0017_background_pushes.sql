-- A typed push can ask for a background refresh instead of an alert (`"push_type":
-- "background"`): APNs content-available at priority 5, Web Push at low urgency. A constant
-- default adds the column without rewriting the table.
ALTER TABLE push_jobs ADD COLUMN background boolean NOT NULL DEFAULT false;
