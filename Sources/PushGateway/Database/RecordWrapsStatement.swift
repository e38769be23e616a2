import PostgresNIO

/// A batch of gift wraps seen by the relay watcher, as one prepared statement (one round trip,
/// one transaction):
/// 1. every wrap is claimed in `seen_wraps`; one claimed before (another relay, another instance,
///    before a restart) is a duplicate and goes no further;
/// 2. live, newly claimed wraps become one push per watching device of the recipient, except
///    where the recipient suppressed the wrap (its own self-copy);
/// 3. coalescing: a device that already has an unclaimed relay-watch job gets that job updated
///    (the newest wrap, the count added) instead of a new one; a new job is scheduled no earlier
///    than the device's `watch_coalesce.next_at`, which moves `coalesce` seconds past it.
/// Rows are (wrap id, recipient, relay, live); history rows (`live` false) only claim.
/// Returns `[wraps claimed, jobs inserted, jobs merged]`.
struct RecordWrapsStatement: PostgresPreparedStatement {
    static let sql = """
        WITH input AS (
            SELECT DISTINCT ON (wrap_id, recipient) wrap_id, recipient, relay, live
            FROM unnest($1::text[], $2::text[], $3::text[], $4::bool[]) AS i(wrap_id, recipient, relay, live)
            ORDER BY wrap_id, recipient, live DESC
        ), claim AS (
            INSERT INTO seen_wraps (wrap_id) SELECT DISTINCT wrap_id FROM input ORDER BY wrap_id
            ON CONFLICT DO NOTHING RETURNING wrap_id
        ), targets AS (
            SELECT DISTINCT ON (d.device_token) d.device_token, d.pubkey, i.wrap_id, i.relay,
                   count(*) OVER (PARTITION BY d.device_token) AS wraps
            FROM input i
            JOIN claim c ON c.wrap_id = i.wrap_id
            JOIN devices d ON d.pubkey = i.recipient AND d.relay_watch
            WHERE i.live
              AND NOT EXISTS (SELECT 1 FROM push_suppressions s WHERE s.pubkey = i.recipient AND s.event_id = i.wrap_id AND s.expires_at > now())
            ORDER BY d.device_token, i.wrap_id
        ), merged AS (
            UPDATE push_jobs j SET event_id = t.wrap_id, relay = t.relay, wrap_count = j.wrap_count + t.wraps
            FROM targets t
            WHERE j.device_token = t.device_token AND j.notification_type = 'gift_wrap' AND j.attempts = 0 AND j.locked_until IS NULL
            RETURNING j.device_token
        ), scheduled AS (
            SELECT t.device_token, t.pubkey, t.wrap_id, t.relay, t.wraps, greatest(now(), coalesce(w.next_at, now())) AS at
            FROM targets t LEFT JOIN watch_coalesce w ON w.device_token = t.device_token
            WHERE NOT EXISTS (SELECT 1 FROM merged m WHERE m.device_token = t.device_token)
        ), jobs AS (
            INSERT INTO push_jobs (apns_id, device_token, pubkey, notification_type, event_id, conversation_id, relay, wrap_count,
                                   next_attempt_at, expires_at)
            SELECT gen_random_uuid(), device_token, pubkey, 'gift_wrap', wrap_id, '', relay, wraps, at, at + make_interval(secs => $6)
            FROM scheduled
            RETURNING device_token, next_attempt_at
        ), coalesced AS (
            INSERT INTO watch_coalesce (device_token, next_at)
            SELECT device_token, next_attempt_at + make_interval(secs => $5) FROM jobs
            ON CONFLICT (device_token) DO UPDATE SET next_at = EXCLUDED.next_at
            RETURNING 1
        )
        SELECT (SELECT count(*) FROM claim)::int, (SELECT count(*) FROM jobs)::int, (SELECT count(*) FROM merged)::int,
               (SELECT count(*) FROM coalesced)::int
        """

    var wrapIDs: [String]
    var recipients: [String]
    var relays: [String]
    var live: [Bool]
    var coalesceSeconds: Int
    var lifetimeSeconds: Int

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 6)
        bindings.append(wrapIDs)
        bindings.append(recipients)
        bindings.append(relays)
        bindings.append(live)
        bindings.append(Double(coalesceSeconds))
        bindings.append(Double(lifetimeSeconds))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> [Int] {
        let (claimed, jobs, merged, _) = try row.decode((Int, Int, Int, Int).self)
        return [claimed, jobs, merged]
    }
}
