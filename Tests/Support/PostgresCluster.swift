public import Foundation

/// A PostgreSQL cluster of a test's own (initdb + pg_ctl through scripts/lib/postgres.sh, as the
/// unprivileged `postgres` user when running as root), for tests that stop and restart the
/// database under a running gateway without disturbing the shared test cluster.
public final class PostgresCluster: @unchecked Sendable {
    public let port: Int
    public let directory: URL
    public var url: String { "postgres://linkstr@127.0.0.1:\(port)/linkstr" }

    public init() throws {
        port = try LoopbackPort.free()
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("linkstr-pg-\(UUID().uuidString.prefix(8))")
    }

    public func start() async throws { try await run("pg_start_cluster '\(directory.path)' \(port)") }

    /// A fast shutdown: connections are cut, as when the database host goes away.
    public func stop() async throws { try await run("pg_stop_cluster '\(directory.path)'") }

    /// Stops the cluster and removes its files.
    public func destroy() async {
        try? await stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func run(_ command: String) async throws {
        let scripts = RustNostrPeer.repositoryRoot.appendingPathComponent("scripts/lib")
        let script = "set -euo pipefail; source '\(scripts.path)/setup.sh'; source '\(scripts.path)/postgres.sh'; \(command)"
        let (code, output) = try await ChildProcess.run("/bin/bash", ["-c", script], timeout: .seconds(90))
        guard code == 0 else { throw FixtureError("PostgreSQL: \(command) exited \(code): \(output)") }
    }
}
