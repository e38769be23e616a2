-- How many devices a pubkey holds, as the planner sees it, comes from ANALYZE's sample. A sample
-- taken while a few pubkeys held most devices (a new deployment's test accounts, a burst of
-- registrations from a handful of keys) makes it expect hundreds of devices per pubkey. On that
-- estimate a check by pubkey that stops at the first row (is this inbox recipient registered?)
-- is planned as a sequential scan expected to end early, and for an unregistered pubkey it reads
-- every device. A pubkey holds at most MAX_DEVICES_PER_PUBKEY devices and usually one or two, so
-- the planner is told so: distinct pubkeys are half the rows (about two devices each), whatever
-- the sample. Pubkeys in the sample's most-common list keep their own measured share.
ALTER TABLE devices ALTER COLUMN pubkey SET (n_distinct = -0.5);
ANALYZE devices;
