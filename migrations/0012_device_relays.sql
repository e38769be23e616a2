-- The inbox relays a registration names (`relays`, at most 10 normalised ws:// or wss:// URLs):
-- where the relay watcher looks for a user's gift wraps when the user publishes no NIP-17 relay
-- list (kind 10050). A constant default adds the column without rewriting the table.
ALTER TABLE devices ADD COLUMN relays text[] NOT NULL DEFAULT '{}';
