import PostgresNIO

/// Whether any batch or job is due: the first of each queue, in its claim index's order, that
/// the claims' own conditions let through. What an idle delivery loop asks before a claim round
/// (`DeliveryQueue.anythingDue`).
///
/// An empty claim round is two statements PostgreSQL plans afresh on every call (they are sent
/// unnamed so that each is planned for the queue as it is: `ClaimJobsQuery`), about 0.6 ms of
/// its CPU each on a slow machine. This one is prepared and has no parameters, so it is planned
/// once per connection. Each read is `ORDER BY … LIMIT 1` in a scalar subquery, because that is
/// the plan PostgreSQL keeps under any statistics, a walk of the claim index from its head
/// (`QueuePlanTests`): `min()` over a table the statistics call empty was planned as an
/// aggregate over the whole index, and `EXISTS` drops its subquery's ordering, leaving a plan
/// free to scan the table.
///
/// The conditions are the claims' (`ClaimBatchesQuery`'s `locked`, `ClaimJobsQuery`'s `due`):
/// due, unexpired, a job not leased (a leased batch's `next_attempt_at` is its lease's end; a
/// job's lease is `locked_until`). So it never misses work. It says yes without work for a claim
/// when the claim's other checks drop a row (a device gone, an archived conversation: the claim
/// deletes it, so the next question says no), when another transaction holds the row locked
/// (`SKIP LOCKED`), or when another loop takes it first.
package struct AnythingDueStatement: PostgresPreparedStatement {
    package static let sql = """
        SELECT (SELECT next_attempt_at FROM push_batches WHERE next_attempt_at <= now() AND expires_at > now()
                ORDER BY next_attempt_at LIMIT 1) IS NOT NULL
            OR (SELECT next_attempt_at FROM push_jobs
                WHERE next_attempt_at <= now() AND (locked_until IS NULL OR locked_until < now()) AND expires_at > now()
                ORDER BY next_attempt_at LIMIT 1) IS NOT NULL
        """

    package init() {}

    func makeBindings() throws -> PostgresBindings { PostgresBindings() }

    func decodeRow(_ row: PostgresRow) throws -> Bool {
        var columns = RowColumns(row)
        return try columns.next(Bool.self)
    }
}
