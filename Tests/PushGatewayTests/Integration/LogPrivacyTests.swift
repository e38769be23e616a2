import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NostrProtocol
import PushGateway
import Synchronization
import TestSupport
import Testing

/// Captures every log line of a gateway run and checks that no device token or key material
/// appears in it.
@Suite(.serialized) struct LogPrivacyTests {
    @Test func tokensAndKeysNeverReachTheLogs() async throws {
        let capture = CapturedLog()
        var configuredLogger = Logger(label: "privacy") { _ in capture.handler() }
        configuredLogger.logLevel = .debug // everything our code logs; PostgresNIO's trace level is never used in production
        let logger = configuredLogger
        let bob = Keys.generate(), alice = Keys.generate()
        let token = Hex.encode(SecureRandom.bytes(32))
        try await TestDatabase.with { url, database in
            let configuration = GatewayHarness.configuration(url)
            let app = try GatewayApplication.build(
                configuration: configuration, migrator: try Migrator.load(directory: Migrator.defaultDirectory()),
                deliver: true, logger: logger)
            try await app.test(.live) { client in
                let gateway = GatewayHarness(client: client, database: database, configuration: configuration, metrics: GatewayMetrics())
                #expect(
                    try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(token)).status == .accepted
                )
                let push = ArchiveAndPushTests.pushBody(to: [bob])
                #expect(try await gateway.send(alice, .post, "/v1/push", json: push).status == .accepted)
                for _ in 0..<50 where try await gateway.count("SELECT count(*)::int FROM push_queue") > 0 {
                    try await Task.sleep(for: .milliseconds(100))
                }
                // A replay and a bad body are logged paths too.
                _ = try await gateway.send(bob, .post, "/v1/devices/register", json: "{", nonce: "n")
                _ = try await gateway.send(bob, .delete, "/v1/account")
            }
        }
        let lines = capture.lines.withLock { $0 }
        #expect(lines.contains { $0.contains("push (delivery disabled)") }, "the run did log")
        #expect(lines.contains { $0.contains("…" + token.suffix(6)) }, "tokens appear redacted")
        let secrets = [
            token, bob.secretKey.exportHex(), bob.secretKey.exportNsec(), alice.secretKey.exportHex(), alice.secretKey.exportNsec(),
        ]
        for line in lines {
            for secret in secrets {
                #expect(!line.contains(secret), "log line leaks a secret: \(line.prefix(120))")
            }
        }
    }
}
