public import Logging
public import PostgresNIO

/// The gateway's access to PostgreSQL: `PostgresClient`'s pool, with every statement sent through
/// `DatabaseConnection` so that none can hang on a connection that has just closed. Results come
/// back as whole arrays: the gateway's statements return at most a batch of rows.
public struct Database: Sendable {
    /// The pool; run it as a service. Statements go through the methods below.
    public let client: PostgresClient

    public init(_ client: PostgresClient) {
        self.client = client
    }

    /// Leases a connection for `body`.
    public func withConnection<Result>(
        isolation: isolated (any Actor)? = #isolation, _ body: (DatabaseConnection) async throws -> sending Result
    ) async throws -> sending Result {
        try await client.withConnection(isolation: isolation) { connection in
            try await body(DatabaseConnection(connection))
        }
    }

    /// Runs one statement on a leased connection and returns its rows. A connection found closed
    /// before the statement was sent is given back and another one leased.
    @discardableResult
    public func query(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await retryingWhatDidNotRun(logger: logger) {
            try await withConnection { try await $0.query(query, logger: logger) }
        }
    }

    /// Runs one prepared statement on a leased connection and returns its rows, like `query`.
    public func execute<Statement: PostgresPreparedStatement>(_ statement: Statement, logger: Logger) async throws -> [Statement.Row] {
        try await retryingWhatDidNotRun(logger: logger) {
            try await withConnection { try await $0.execute(statement, logger: logger) }
        }
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws, and its
    /// error (or the commit's) thrown as it is. A connection found closed before one of the
    /// transaction's statements was sent (COMMIT included) committed nothing, so the whole
    /// transaction runs again on another connection.
    public func withTransaction<Result>(logger: Logger, _ body: (DatabaseConnection) async throws -> Result) async throws -> Result {
        try await retryingWhatDidNotRun(logger: logger) {
            try await withConnection { connection in
                try await connection.query("BEGIN", logger: logger)
                let result: Result
                do {
                    result = try await body(connection)
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: logger)
                    throw error
                }
                try await connection.query("COMMIT", logger: logger)
                return result
            }
        }
    }

    /// Retries `body` while it fails with `DatabaseConnectionClosed`, which means nothing was sent
    /// (or, in a transaction, nothing committed), or with `StalePreparedStatement`, which means
    /// the statement was refused before it ran and its connection closed (in a transaction, the
    /// transaction was rolled back). The pool drops a closed connection within an event-loop turn
    /// or two; the short pause lets it, after which a fresh lease either gets an open connection or
    /// waits for one like any other request.
    ///
    /// Stale statements have a budget of their own, larger than any pool: after a migration every
    /// connection that prepared the statement is stale, the pool hands out its idle connections
    /// first, and each refusal closes one, so a caller may meet as many as the pool holds before
    /// a fresh one.
    private func retryingWhatDidNotRun<Result>(logger: Logger, _ body: () async throws -> Result) async throws -> Result {
        var closed = 0
        var stale = 0
        while true {
            do {
                return try await body()
            } catch is StalePreparedStatement where stale < Self.staleStatementRetries {
                stale += 1
            } catch is DatabaseConnectionClosed where closed < 3 {
                closed += 1
                logger.debug("leased a database connection that had just closed; leasing another")
                try await Task.sleep(for: .milliseconds(5 * closed))
            }
        }
    }

    /// More than the largest pool the gateway makes (`GatewayApplication`: 40 connections).
    static let staleStatementRetries = 64
}

extension Array where Element == PostgresRow {
    /// Every row decoded as `columns`.
    public func decode<each Column: PostgresDecodable>(_ columns: (repeat each Column).Type) throws -> [(repeat each Column)] {
        try map { try $0.decode(columns) }
    }
}
