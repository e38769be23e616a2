public import Logging
public import PostgresNIO

/// A leased PostgreSQL connection whose statements cannot hang: each one is sent from the
/// connection's event loop right after checking, in the same event-loop turn, that the connection
/// is still open. A closed one fails the statement with `DatabaseConnectionClosed` at once.
///
/// Why: postgres-nio 1.33.2 writes a statement to its channel without a write promise. When the
/// pool leases a connection whose channel closed a moment before (PostgreSQL restarting), and the
/// channel's handlers are already gone, the write is dropped and the statement's promise is never
/// completed: the caller waits forever and does not react to cancellation. A delivery loop stuck
/// there sends nothing until the process is killed (`DatabaseRestartTests`). SwiftNIO removes a
/// channel's handlers only in an event-loop turn after the one in which it went inactive, so a
/// statement written in the turn where `isClosed` was false reaches the handler, which answers it
/// even if the connection closes next.
public struct DatabaseConnection: Sendable {
    /// For what needs the connection itself (LISTEN); its own statements are not guarded.
    public let underlying: PostgresConnection
    private let executor: EventLoopTaskExecutor

    init(_ connection: PostgresConnection) {
        underlying = connection
        executor = EventLoopTaskExecutor.of(connection.eventLoop)
    }

    /// Runs `query` and returns all its rows.
    @discardableResult
    public func query(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await sentFromEventLoop {
            try await underlying.query(query, logger: logger).collect()
        }
    }

    /// Runs a prepared statement (prepared on this connection on first use) and returns its rows.
    ///
    /// A statement whose result type a migration changed since it was prepared here (a column's
    /// type or collation) is refused by PostgreSQL, and postgres-nio would send the same prepared
    /// statement on this connection for as long as it lives. So the connection is closed, to be
    /// replaced by one that prepares the statement afresh, and `StalePreparedStatement` thrown:
    /// the statement was refused before it ran.
    public func execute<Statement: PostgresPreparedStatement>(_ statement: Statement, logger: Logger) async throws -> [Statement.Row] {
        do {
            return try await sentFromEventLoop {
                var rows: [Statement.Row] = []
                for try await row in try await underlying.execute(statement, logger: logger) { rows.append(row) }
                return rows
            }
        } catch let error as PSQLError where StalePreparedStatement.matches(error) {
            logger.notice(
                "a prepared statement's result type changed under it (a migration); replacing the connection",
                metadata: ["db.statement": "\(Statement.self)"])
            try? await underlying.close()
            throw StalePreparedStatement()
        } catch let error as PSQLError where Self.mayEndAPreparation(error) {
            // postgres-nio keeps a statement whose preparation failed as failed for the life of the
            // connection, and these can strike a preparation (one waiting behind a migration's
            // locks): the connection goes, and the error to the caller, who may retry it.
            try? await underlying.close()
            throw error
        }
    }

    /// A deadlock (40P01) or a cancelled statement (57014): errors that can end a preparation
    /// that would succeed a moment later.
    static func mayEndAPreparation(_ error: PSQLError) -> Bool {
        ["40P01", "57014"].contains(error.serverInfo?[.sqlState] ?? "")
    }

    /// `send` must write its statement before its first suspension, as postgres-nio's `query` and
    /// `execute` do.
    private func sentFromEventLoop<Result>(_ send: () async throws -> Result) async throws -> Result {
        try await withTaskExecutorPreference(executor) {
            assert(underlying.eventLoop.inEventLoop, "a guarded statement must be sent from its connection's event loop")
            guard !underlying.isClosed else { throw DatabaseConnectionClosed() }
            return try await send()
        }
    }
}

/// The connection was closed before the statement was sent: nothing of it reached PostgreSQL.
public struct DatabaseConnectionClosed: Error, Equatable {}

/// PostgreSQL refused a prepared statement whose result type changed since it was prepared on the
/// connection ("cached plan must not change result type"): it did not run. The connection has
/// been closed, so the next lease prepares the statement again.
public struct StalePreparedStatement: Error, Equatable {
    /// The refusal: SQLSTATE 0A000 from the plan cache's check (matched by routine, which is not
    /// translated like the message).
    static func matches(_ error: PSQLError) -> Bool {
        error.serverInfo?[.sqlState] == "0A000" && error.serverInfo?[.routine] == "RevalidateCachedQuery"
    }
}
