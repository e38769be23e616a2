package import Foundation
package import PostgresNIO

/// Claims up to `limit` due, unexpired jobs for `leaseSeconds` (`DeliveryQueue.claim`).
///
/// The head of the queue in index order (migrations 0002 and 0010: by due time alone, so no
/// statistics can make it a sort of every due job), locked; jobs raced by a token move or an
/// archive update since they were queued are deleted, never sent; the rest are leased and
/// returned with their device. The array conditions keep the raced delete and the lease update
/// reading jobs by primary key under any statistics (see `FinishJobsStatement`; `QueuePlanTests`
/// checks every plan).
///
/// Prepared, so planned once per connection rather than on every call. Claims are the hot path
/// whenever pushes arrive faster than they are sent (a burst waits in the queue, and every job of
/// it is claimed): in the gateway benchmark planning took 0.55 ms of a claim's 3.7 ms.
/// `QueuePlanTests` checks that its generic plan reads the queue by key.
package struct ClaimJobsStatement: PostgresPreparedStatement {
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

    package typealias Row = (
        id: Int64, apnsID: UUID, deviceToken: String, pubkey: String, environment: String?, topic: String, deviceUpdatedAt: Date,
        type: String, eventID: String, conversationID: String, emoji: String?, postID: String?, attempts: Int, expiresAt: Date,
        relay: String?, wrapCount: Int, platform: String, pushType: String, p256dh: String?, authSecret: String?, background: Bool
    )

    var limit: Int
    var leaseSeconds: Int

    package func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(limit)
        bindings.append(leaseSeconds)
        return bindings
    }

    package func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(
            (
                Int64, UUID, String, String, String?, String, Date, String, String, String, String?, String?, Int, Date, String?, Int,
                String, String, String?, String?, Bool
            ).self)
    }
}
