-- The two batch arrays that PostgreSQL still compresses (migration 0022 left them so) are
-- compressed with lz4 instead of pglz. A gift-wrap batch's `pubkeys` are random hex, which pglz
-- tried to shrink and could not, once per batch: 0.6 ms a 254-member batch, about 2 µs of
-- PostgreSQL CPU a wrap, against 0.13 ms for lz4, which also gives up sooner. A typed push's batch
-- repeats each recipient's pubkey per device, and `relays` repeats one relay, which both methods
-- shrink alike (a 254-member `relays` to 123 bytes).
--
-- Only rows written from now on use it; stored ones are read as they are. A server built without
-- lz4 keeps pglz: the batches work either way, only slower.
DO $$
BEGIN
    ALTER TABLE push_batches
        ALTER COLUMN pubkeys SET COMPRESSION lz4,
        ALTER COLUMN relays SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'this PostgreSQL has no lz4: push_batches keeps pglz';
END
$$;
