public import Foundation

/// Everything the console page shows, read at one moment. Built by `GatewayAPI` from the
/// snapshots `/readyz` and `/metrics` already keep, so a console left open adds no database load
/// beyond theirs.
public struct ConsoleSnapshot: Sendable {
    public var generatedAt: Date
    public var ready: Bool
    /// Why the instance is not ready (`database unreachable`, `database not migrated`).
    public var readinessProblem: String?
    public var uptimeSeconds: Int
    /// The schema version the database is at, when it could be read.
    public var migrationApplied: Int?
    /// The schema version this binary needs.
    public var migrationExpected: Int
    /// nil when the database could not be read in time.
    public var queue: QueueDepth?
    public var pushRates: PushRateWindow
    /// nil when the relay watcher is off (`RELAYS` unset).
    public var watch: RelayWatcher.Status?
    public var recentFailures: [RecentPushFailures.Failure]

    public init(
        generatedAt: Date, ready: Bool, readinessProblem: String?, uptimeSeconds: Int, migrationApplied: Int?, migrationExpected: Int,
        queue: QueueDepth?, pushRates: PushRateWindow, watch: RelayWatcher.Status?, recentFailures: [RecentPushFailures.Failure]
    ) {
        self.generatedAt = generatedAt
        self.ready = ready
        self.readinessProblem = readinessProblem
        self.uptimeSeconds = uptimeSeconds
        self.migrationApplied = migrationApplied
        self.migrationExpected = migrationExpected
        self.queue = queue
        self.pushRates = pushRates
        self.watch = watch
        self.recentFailures = recentFailures
    }
}
