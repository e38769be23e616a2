package import Logging
import PostgresNIO

/// Takes a pubkey's devices out of the queued batches (`push_batches`): all of
/// them when its account is erased, those of the conversations it archived
/// (`GatewayStore.deleteAccount`, `GatewayStore.updateArchive`). Returns the batches left with no
/// device, for `emptiedBatchesDeletion` to delete.
///
/// The new arrays are computed from the row being updated, not from a snapshot read beforehand:
/// when another removal changed the row first, PostgreSQL evaluates them again on its newer
/// version, so two removals in one batch never write back each other's members. A member already
/// in flight is still sent, as a job in flight is; its batch no longer holds its apns-id, so a
/// retry is not queued for it (`FinishBatchesStatement`).
package struct BatchMembersRemoval {
    /// Every batch: erasure scans the batches, which live minutes at most.
    package static let everySQL = sql(where: "$1 = ANY (b.pubkeys)")
    /// Batches of the archived conversations, found through `push_batches_conversation_idx`.
    package static let conversationsSQL = sql(where: "b.conversation_id = ANY ($2::text[]) AND $1 = ANY (b.pubkeys)")

    /// The batches are locked in id order first, the order in which finishing locks them, so a
    /// removal and a finish never wait on each other in opposite orders (a deadlock would abort
    /// one: a finish aborted sends its whole batches again).
    static func sql(where condition: String) -> String {
        """
        WITH locked AS (
            SELECT b.id FROM push_batches b WHERE \(condition) ORDER BY b.id FOR UPDATE
        )
        UPDATE push_batches b SET (device_tokens, pubkeys, apns_ids, event_ids, relays, wrap_counts, size) = (
            SELECT coalesce(array_agg(u.token ORDER BY u.n), '{}'), coalesce(array_agg(u.owner ORDER BY u.n), '{}'),
                   coalesce(array_agg(u.apns_id ORDER BY u.n), '{}'),
                   -- A gift-wrap batch's own arrays (migration 0021) keep their members' places;
                   -- a typed push's stay NULL.
                   CASE WHEN b.event_ids IS NOT NULL THEN coalesce(array_agg(u.event_id ORDER BY u.n), '{}') END,
                   CASE WHEN b.relays IS NOT NULL THEN coalesce(array_agg(u.relay ORDER BY u.n), '{}') END,
                   CASE WHEN b.wrap_counts IS NOT NULL THEN coalesce(array_agg(u.wrap_count ORDER BY u.n), '{}') END,
                   count(*)::int
            FROM unnest(b.device_tokens, b.pubkeys, b.apns_ids, b.event_ids, b.relays, b.wrap_counts) WITH ORDINALITY
                 AS u(token, owner, apns_id, event_id, relay, wrap_count, n)
            WHERE u.owner <> $1)
        WHERE b.id = ANY (ARRAY(SELECT id FROM locked)) AND $1 = ANY (b.pubkeys)
        RETURNING b.id, b.size
        """
    }

    /// Deletes the batches a removal left empty.
    package static let emptiedBatchesDeletion = "DELETE FROM push_batches WHERE id = ANY ($1::bigint[]) AND size = 0"

    var pubkey: String
    /// nil: every batch.
    var conversationIDs: [String]?

    package init(pubkey: String, conversationIDs: [String]?) {
        self.pubkey = pubkey
        self.conversationIDs = conversationIDs
    }

    /// Runs the removal and the deletion of the batches it emptied on `connection`, inside the
    /// caller's transaction.
    package func run(on connection: DatabaseConnection, logger: Logger) async throws {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(pubkey)
        if let conversationIDs { bindings.append(conversationIDs) }
        let sql = conversationIDs == nil ? Self.everySQL : Self.conversationsSQL
        var emptied: [Int64] = []
        for (id, size) in try await connection.query(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: logger).decode(
            (Int64, Int).self)
        where size == 0 {
            emptied.append(id)
        }
        guard !emptied.isEmpty else { return }
        var deletion = PostgresBindings(capacity: 1)
        deletion.append(emptied)
        try await connection.query(PostgresQuery(unsafeSQL: Self.emptiedBatchesDeletion, binds: deletion), logger: logger)
    }
}
