import PostgresNIO

/// Claims up to `limit` due, unexpired jobs for `leaseSeconds` (`DeliveryQueue.claim`).
///
/// The head of the queue in index order (migrations 0002 and 0010: by due time alone, so no
/// statistics can make it a sort of every due job), locked; jobs raced by a token move or an
/// archive update since they were queued are deleted, never sent; the rest are leased and
/// returned with their device. The array conditions keep the raced delete and the lease update
/// reading jobs by primary key under any statistics (see `FinishJobsStatement`; `QueuePlanTests`
/// checks every plan).
///
/// Sent unnamed, so planned for its values on every call. A prepared version, planned once per
/// connection, was measured in `scripts/bench-gateway.sh` (a 50,000-push burst, ~40,000 of it
/// claimed) and not adopted: its generic plan took 6.8 ms a claim against 4.0–5.5 ms for a custom
/// plan plus 0.6–0.9 ms of planning.
package struct ClaimJobsQuery {
    package static let sql = """
        WITH due AS (
            SELECT j.id FROM push_jobs j
            WHERE j.next_attempt_at <= now() AND (j.locked_until IS NULL OR j.locked_until < now()) AND j.expires_at > now()
            ORDER BY j.next_attempt_at
            LIMIT $1
            FOR UPDATE SKIP LOCKED
        ), raced AS (
            DELETE FROM push_jobs j USING due
            WHERE j.id = ANY (ARRAY(SELECT id FROM due)) AND j.id = due.id
              AND (NOT EXISTS (SELECT 1 FROM devices d WHERE d.device_token = j.device_token AND d.pubkey = j.pubkey)
                   OR EXISTS (SELECT 1 FROM archived_conversations a WHERE a.pubkey = j.pubkey AND a.conversation_id = j.conversation_id))
        )
        UPDATE push_jobs j SET locked_until = now() + make_interval(secs => $2), attempts = j.attempts + 1
        FROM due, devices d
        WHERE j.id = ANY (ARRAY(SELECT id FROM due)) AND j.id = due.id AND d.device_token = j.device_token AND d.pubkey = j.pubkey
          AND NOT EXISTS (SELECT 1 FROM archived_conversations a WHERE a.pubkey = j.pubkey AND a.conversation_id = j.conversation_id)
        RETURNING j.id, j.apns_id, j.device_token, j.pubkey, d.apns_environment, d.topic, d.updated_at,
                  j.notification_type, j.event_id, j.conversation_id, j.emoji, j.post_id, j.attempts, j.expires_at,
                  j.relay, j.wrap_count, d.platform, d.push_type, d.p256dh, d.auth_secret, j.background
        """

    var limit: Int
    var leaseSeconds: Int

    var query: PostgresQuery {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(limit)
        bindings.append(leaseSeconds)
        return PostgresQuery(unsafeSQL: Self.sql, binds: bindings)
    }
}
