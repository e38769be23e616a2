import PostgresNIO

/// Deletes the queued jobs of conversations `pubkey` has just archived (`GatewayStore.updateArchive`).
///
/// Through the owner's devices: push_jobs has no index on (pubkey, conversation), and the tokens
/// named as an array keep it a probe of `push_jobs_queued_device_idx` under any statistics, also
/// those of a drained queue (`QueuePlanTests`). Queued jobs only; a direct one in flight is dropped
/// by the claim if it comes back.
package struct ArchivedJobsDeletion {
    package static let sql = """
        DELETE FROM push_jobs
        WHERE device_token = ANY (ARRAY(SELECT device_token FROM devices WHERE pubkey = $1))
          AND NOT direct AND pubkey = $1 AND conversation_id = ANY ($2::text[])
        """

    var pubkey: String
    var conversationIDs: [String]

    var query: PostgresQuery {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(pubkey)
        bindings.append(conversationIDs)
        return PostgresQuery(unsafeSQL: Self.sql, binds: bindings)
    }
}
