import PostgresNIO

/// Whether any batch or job may be due: the head of each claim index (`push_batches`,
/// `push_jobs`) read up to now. What an idle delivery loop asks at a tick before a claim round
/// (`DeliveryQueue.anythingDue`).
///
/// An empty claim round is two statements PostgreSQL plans afresh on every call (they are sent
/// unnamed so that each is planned for the queue as it is: `ClaimJobsQuery`), about 0.3–0.6 ms
/// of its CPU each. This one is prepared and has no parameters, so it is planned once per
/// connection. Each read is the first due entry in index order, `ORDER BY … LIMIT 1` in a scalar
/// subquery, because that is the plan PostgreSQL keeps under any statistics (`QueuePlanTests`):
/// `min()` over a table the statistics call empty was planned as an aggregate over the whole
/// index, and `EXISTS` drops its subquery's ordering, leaving a plan free to scan the table.
///
/// It never misses work: a row the claims take has `next_attempt_at <= now()` (a leased batch's
/// or job's is its lease's end). It may say yes when a claim finds nothing (an expired row
/// maintenance has not deleted yet, a job whose device is gone); the claim round then runs as
/// it would have without it.
package struct AnythingDueStatement: PostgresPreparedStatement {
    package static let sql = """
        SELECT (SELECT next_attempt_at FROM push_batches WHERE next_attempt_at <= now() ORDER BY next_attempt_at LIMIT 1) IS NOT NULL
            OR (SELECT next_attempt_at FROM push_jobs WHERE next_attempt_at <= now() ORDER BY next_attempt_at LIMIT 1) IS NOT NULL
        """

    package init() {}

    func makeBindings() throws -> PostgresBindings { PostgresBindings() }

    func decodeRow(_ row: PostgresRow) throws -> Bool {
        var columns = RowColumns(row)
        return try columns.next(Bool.self)
    }
}
