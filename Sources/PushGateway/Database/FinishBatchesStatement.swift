import PostgresNIO

/// Deletes finished batches of pushes (`push_batches`), each fenced by its attempt count
/// (a worker whose lease ran out, and whose batch was claimed again, cannot touch the newer
/// claim), and queues the members whose push service asked for a retry as jobs of their own in
/// `push_jobs`: the same apns-id, attempt count, payload (a gift-wrap member's own wrap, relay and
/// count), expiry and queueing time, due after the retry's delay.
/// One statement, so a batch is never gone without its retries, nor are retries queued for a
/// batch another claim holds.
///
/// Prepared, like `FinishJobsStatement`, and for the same reason: it runs after every round that
/// sent a batch. `b.id = ANY ($1)` keeps the batches read through the primary key under any
/// statistics (`QueuePlanTests`).
package struct FinishBatchesStatement: PostgresPreparedStatement {
    static let sql = """
        WITH done AS (
            DELETE FROM push_batches b USING unnest($1::bigint[], $2::int[]) AS f(id, attempts)
            WHERE b.id = ANY ($1::bigint[]) AND b.id = f.id AND b.attempts = f.attempts
            RETURNING b.id, b.notification_type, b.event_id, b.conversation_id, b.emoji, b.post_id, b.background, b.attempts, b.expires_at,
                      b.created_at, b.apns_ids, b.event_ids, b.relays, b.wrap_counts
        )
        INSERT INTO push_jobs (apns_id, device_token, pubkey, notification_type, event_id, conversation_id, emoji, post_id, background,
                               relay, wrap_count, attempts, next_attempt_at, expires_at, last_error, created_at)
        -- A gift-wrap batch's member keeps its own wrap, relay and count; a typed push's batch
        -- has no such arrays, and an element of a NULL array is NULL.
        SELECT r.apns_id, r.device_token, r.pubkey, d.notification_type, coalesce(d.event_ids[m.n], d.event_id), d.conversation_id, d.emoji,
               d.post_id, d.background, d.relays[m.n], coalesce(d.wrap_counts[m.n], 1), d.attempts, now() + make_interval(secs => r.delay),
               d.expires_at, r.error, d.created_at
        FROM unnest($3::bigint[], $4::uuid[], $5::text[], $6::text[], $7::float8[], $8::text[])
             AS r(batch_id, apns_id, device_token, pubkey, delay, error)
        -- Only members still in the batch (one whose owner archived the conversation or erased
        -- the account while it was in flight was taken out), and whose device is still
        -- registered to them since before the push was queued (not removed, moved or registered
        -- again meanwhile): the claim's rule, which the job claim does not repeat.
        JOIN done d ON d.id = r.batch_id
        CROSS JOIN LATERAL (SELECT array_position(d.apns_ids, r.apns_id) AS n) m
        WHERE m.n IS NOT NULL AND EXISTS (
            SELECT 1 FROM devices v WHERE v.device_token = r.device_token AND v.pubkey = r.pubkey AND v.registered_at <= d.created_at)
        """

    var ids: [Int64]
    var attempts: [Int]
    var retries: [MemberRetry]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 8)
        bindings.append(ids)
        bindings.append(attempts)
        bindings.append(retries.map(\.member.id))
        bindings.append(retries.map(\.member.apnsID))
        bindings.append(retries.map(\.member.deviceToken))
        bindings.append(retries.map(\.member.pubkey))
        bindings.append(retries.map(\.delaySeconds))
        bindings.append(retries.map(\.reason))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws {}
}
