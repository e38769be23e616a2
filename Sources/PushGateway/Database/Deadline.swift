/// `withDeadline` gave up: the work did not finish in time and was cancelled.
struct DeadlineExceeded: Error {}

/// Runs `body`, cancelling it once `limit` has passed. An unreachable database leaves the pool
/// waiting for a connection that cannot be made; requests and probes must get their answer in
/// bounded time instead.
func withDeadline<Result: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> Result) async throws -> Result {
    try await withThrowingTaskGroup(of: Result?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        // `Result` may itself be optional: only the timer's plain nil means the deadline passed.
        guard let result = try await group.next()! else { throw DeadlineExceeded() }
        return result
    }
}
