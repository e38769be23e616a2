import PostgresNIO

/// Claims due, unexpired batches of pushes (`push_batches`, migrations 0019 and 0021) for
/// `leaseSeconds`: whole batches, oldest first, up to `limit` devices in all (at least one batch
/// however large), and returns each batch's members still to be sent with their devices
/// (`DeliveryQueue.claimBatches`), a gift-wrap batch's members each with their own wrap id,
/// relay and count (migration 0021).
///
/// The head of the queue in index order, locked; each batch taken is leased (its attempt count
/// raised, so an older claim cannot finish it) and its members joined, one index probe each, with
/// their devices and the owners' archived conversations: a member whose device is gone, belongs
/// to someone else or was registered again since the push was queued, or whose owner archived
/// the conversation, is left out, as the job claim drops such a job. A batch with no member left still returns one row,
/// with NULL member columns, so that the caller can delete it.
///
/// Sent unnamed like `ClaimJobsQuery`, planned for its values on every call (`QueuePlanTests`
/// checks its plans).
package struct ClaimBatchesQuery {
    package static let sql = """
        WITH locked AS (
            SELECT b.id, b.size, b.next_attempt_at FROM push_batches b
            WHERE b.next_attempt_at <= now() AND b.expires_at > now()
            ORDER BY b.next_attempt_at
            LIMIT $1
            FOR UPDATE SKIP LOCKED
        ), due AS (
            -- Whole batches up to $1 devices in all, and always the first (the only one whose
            -- running sum is its own size): rows locked but not taken stay due and are unlocked
            -- when the statement commits.
            SELECT id FROM (
                SELECT id, size, sum(size) OVER (ORDER BY next_attempt_at, id) AS running FROM locked
            ) counted
            WHERE running <= $1 OR running = size
        ), leased AS (
            UPDATE push_batches b SET next_attempt_at = now() + make_interval(secs => $2), attempts = b.attempts + 1
            WHERE b.id = ANY (ARRAY(SELECT id FROM due))
            RETURNING b.id, b.attempts, b.expires_at, b.created_at, b.notification_type, b.event_id, b.conversation_id, b.emoji,
                      b.post_id, b.background, b.device_tokens, b.pubkeys, b.apns_ids, b.event_ids, b.relays, b.wrap_counts
        )
        SELECT l.id, l.attempts, l.expires_at, l.notification_type, l.event_id, l.conversation_id, l.emoji, l.post_id, l.background,
               m.apns_id, m.device_token, m.pubkey, m.apns_environment, m.topic, m.updated_at, m.platform, m.push_type, m.p256dh,
               m.auth_secret, m.event_id, m.relay, m.wrap_count
        FROM leased l
        LEFT JOIN LATERAL (
            SELECT u.apns_id, u.device_token, u.pubkey, d.apns_environment, d.topic, d.updated_at, d.platform, d.push_type, d.p256dh,
                   d.auth_secret, u.event_id, u.relay, u.wrap_count
            -- A typed push's batch has no per-member arrays: unnest pads the NULL ones with NULLs.
            FROM unnest(l.device_tokens, l.pubkeys, l.apns_ids, l.event_ids, l.relays, l.wrap_counts)
                 AS u(device_token, pubkey, apns_id, event_id, relay, wrap_count)
            -- Registered to that pubkey since before the push was queued: a device removed and
            -- registered again, or moved away and back, does not get the push it was removed from.
            CROSS JOIN LATERAL (
                SELECT * FROM devices d
                WHERE d.device_token = u.device_token AND d.pubkey = u.pubkey AND d.registered_at <= l.created_at OFFSET 0
            ) d
            WHERE NOT EXISTS (
                SELECT 1 FROM archived_conversations a WHERE a.pubkey = u.pubkey AND a.conversation_id = l.conversation_id OFFSET 0)
        ) m ON true
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
