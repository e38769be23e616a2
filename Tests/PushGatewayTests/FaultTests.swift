import AsyncHTTPClient
import Foundation
import NostrProtocol
@testable import PushGateway
import TestSupport
import Testing

/// Faults under a real `linkstr-push` process: its database going away and coming back, and what
/// its logs must never contain.
@Suite(.serialized) struct FaultTests {
    static func devices(_ cluster: PostgresCluster) async throws -> [String] {
        let (code, output) = try await ChildProcess.run("/bin/bash", ["-c", """
            source '\(RustNostrPeer.repositoryRoot.path)/scripts/lib/postgres.sh'
            pg_as_owner "$(pg_bin_dir)/psql" -h 127.0.0.1 -p \(cluster.port) -U linkstr -d linkstr -qAt -c 'SELECT device_token FROM devices ORDER BY 1'
            """])
        guard code == 0 else { throw FixtureError("psql: \(output)") }
        return output.split(separator: "\n").map(String.init)
    }

    /// PostgreSQL stopped for 20 s and started again: the gateway reports not-ready, keeps serving
    /// `/healthz`, refuses what it cannot store with a clear error, recovers without a restart,
    /// and every registration it accepted is there.
    @Test func theDatabaseGoingAwayForTwentySecondsLosesNothingAccepted() async throws {
        let cluster = try PostgresCluster()
        try await cluster.start()
        defer { Task { await cluster.destroy() } }
        try await SandboxFixture.with { sandbox in
            let database = try DatabaseURL(parsing: cluster.url)
            let gateway = try await GatewayProcess.start(database: database, sandbox: sandbox)
            defer { gateway.kill() }
            let keys = Keys.generate()
            let before = "aa" + String(repeating: "01", count: 31), after = "bb" + String(repeating: "02", count: 31)
            #expect(try await gateway.send(keys, "POST", "/v1/devices/register", json: GatewayHarness.registerBody(before)) == 202)

            try await cluster.stop()
            let down = ContinuousClock.now
            #expect(try await GatewayHarness.eventually(within: 15) { try await gateway.get("/readyz").status == 503 })
            #expect(try await gateway.get("/healthz").status == 200, "alive while the database is away")
            let refused = try await gateway.send(keys, "POST", "/v1/devices/register", json: GatewayHarness.registerBody("cc" + String(repeating: "03", count: 31)))
            #expect(refused == 500, "not accepted: the client will retry")
            let remaining = .seconds(20) - (ContinuousClock.now - down)
            if remaining > .zero { try await Task.sleep(for: remaining) }
            #expect(try await gateway.get("/healthz").status == 200)

            try await cluster.start()
            #expect(try await GatewayHarness.eventually(within: 30) { try await gateway.get("/readyz").status == 200 }, "recovered without a restart")
            #expect(try await gateway.send(keys, "POST", "/v1/devices/register", json: GatewayHarness.registerBody(after)) == 202)
            #expect(try await Self.devices(cluster) == [before, after])
            #expect(gateway.stop(), "and it still shuts down gracefully")
        }
    }

    /// Device tokens, keys and secrets never reach the logs, even at trace level.
    @Test func logsNeverCarryTokensKeysOrSecrets() async throws {
        let cluster = try PostgresCluster()
        try await cluster.start()
        defer { Task { await cluster.destroy() } }
        try await SandboxFixture.with { sandbox in
            let nsec = Keys.generate().secretKey
            let adminToken = "admin-" + Hex.encode(SecureRandom.bytes(16))
            let gateway = try await GatewayProcess.start(database: try DatabaseURL(parsing: cluster.url), sandbox: sandbox, environment: [
                "LOG_LEVEL": "trace", "LOG_FORMAT": "json", "GATEWAY_NSEC": nsec.exportNsec(), "ADMIN_TOKEN": adminToken,
            ])
            let alice = Keys.generate(), bob = Keys.generate()
            let token = "ab" + Hex.encode(SecureRandom.bytes(31))
            #expect(try await gateway.send(bob, "POST", "/v1/devices/register", json: GatewayHarness.registerBody(token)) == 202)
            #expect(try await gateway.send(bob, "POST", "/v1/devices/register", json: GatewayHarness.registerBody("zz")) == 400)
            let push = #"{"notification_type":"new_post","event_id":"e1","conversation_id":"c1","recipient_pubkeys":["\#(bob.publicKey.hex)"]}"#
            #expect(try await gateway.send(alice, "POST", "/v1/push", json: push) == 202)
            #expect(try await GatewayHarness.eventually { sandbox.delivered().count == 1 })
            _ = try await gateway.get("/admin/status")
            #expect(try await gateway.send(bob, "POST", "/v1/devices/unregister", json: #"{"device_token":"\#(token)"}"#) == 202)
            try await Task.sleep(for: .milliseconds(300))
            // Read before stopping: a graceful stop removes the log file.
            let log = try String(contentsOfFile: gateway.logPath, encoding: .utf8)
            #expect(gateway.stop(within: 15))
            #expect(log.count > 1_000, "trace logging produced output to check")
            let secrets: [(String, String)] = [
                ("device token", token), ("device token (uppercase)", token.uppercased()),
                ("gateway nsec", nsec.exportNsec()), ("gateway secret (hex)", nsec.exportHex()),
                ("admin token", adminToken), ("APNs key", String(sandbox.keyPEM.split(separator: "\n")[1])),
                ("client secret", alice.secretKey.exportHex()), ("client secret", bob.secretKey.exportHex()),
            ]
            for (what, secret) in secrets { #expect(!log.contains(secret), "the log contains the \(what)") }
            #expect(log.contains(String(token.suffix(6))), "tokens appear redacted to their last 6 characters")
        }
    }
}
