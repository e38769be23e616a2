import PostgresNIO

/// Deletes finished jobs (delivered, or dropped for good), each fenced by its attempt count: a
/// worker whose lease ran out, and whose job was claimed again, cannot touch the newer claim.
///
/// Prepared, so it is parsed and planned once per connection: it runs after every delivery round
/// (with the relay watcher at 5,000 wraps/s, ~250 times a second), and as an unnamed statement
/// PostgreSQL spent more time parsing and planning it than deleting (pg_stat_statements: 0.11 ms
/// planning against 0.07 ms executing a call).
///
/// `j.id = ANY ($1)` repeats the join's condition so that the jobs are always read through the
/// primary key, whatever the statistics say. The queue drains to nothing between bursts; an
/// autovacuum that finds it empty records one row in a table still hundreds of pages long, and
/// with those figures the plain join was planned as a full scan of the primary key (every dead
/// entry of the last burst visited) joined to the ids: 0.5–1 s a call instead of 0.1 ms,
/// ~50 s of backlog in the watcher benchmark until the next ANALYZE (`QueuePlanTests`).
package struct FinishJobsStatement: PostgresPreparedStatement {
    static let sql = """
        DELETE FROM push_jobs j USING unnest($1::bigint[], $2::int[]) AS done(id, attempts)
        WHERE j.id = ANY ($1::bigint[]) AND j.id = done.id AND j.attempts = done.attempts
        """

    var ids: [Int64]
    var attempts: [Int]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(ids)
        bindings.append(attempts)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws {}
}
