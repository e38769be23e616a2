public import NostrRelay

extension RelayConnection {
    /// Runs the connection as a service for the duration of `body`, then stops it.
    public func running<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await self.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await body()
        }
    }
}
