import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NostrProtocol
import PushGateway
import Synchronization
import Testing

/// `GET /metrics` after real traffic: requests by route and status, auth failures by reason, queue
/// depth, pushes by outcome and reason, the send-latency histogram and the provider token's age.
@Suite(.serialized) struct MetricsTests {
    @Test func metricsDescribeWhatHappened() async throws {
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns) { gateway in
                let alice = Keys.generate(), bob = Keys.generate(), carol = Keys.generate()
                try await gateway.send(
                    bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(HTTP2DeliveryTests.token(0x61)))
                try await gateway.send(
                    carol, .post, "/v1/devices/register", json: GatewayHarness.registerBody(HTTP2DeliveryTests.token(prefix: "0400", 0x62)))
                #expect(
                    try await gateway.send(alice, .post, "/v1/push", json: ArchiveAndPushTests.pushBody(to: [bob, carol])).status
                        == .accepted)
                #expect(try await GatewayHarness.eventually { try await gateway.count("SELECT count(*)::int FROM push_queue") == 0 })
                // Two refused requests: a replayed nonce and no header at all.
                try await gateway.send(
                    alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(HTTP2DeliveryTests.token(0x63)), nonce: "once")
                try await gateway.send(
                    alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(HTTP2DeliveryTests.token(0x63)), nonce: "once")
                try await gateway.send(nil, .post, "/v1/push", json: "{}")

                let response = try await gateway.client.execute(uri: "/metrics", method: .get)
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("text/plain") == true)
                let text = String(buffer: response.body)
                let expected = [
                    #"linkstr_http_requests_total{route="/v1/devices/register",method="POST",status="202"} 3"#,
                    #"linkstr_http_requests_total{route="/v1/devices/register",method="POST",status="401"} 1"#,
                    #"linkstr_http_requests_total{route="/v1/push",method="POST",status="202"} 1"#,
                    #"linkstr_auth_failures_total{reason="replayed"} 1"#,
                    #"linkstr_auth_failures_total{reason="missing_header"} 1"#,
                    #"linkstr_pushes_total{outcome="delivered",reason="none"} 1"#,
                    #"linkstr_pushes_total{outcome="device_removed",reason="BadDeviceToken"} 1"#,
                    #"linkstr_apns_send_duration_seconds_count{status="200"} 1"#,
                    #"linkstr_apns_send_duration_seconds_count{status="400"} 1"#,
                ]
                for line in expected {
                    #expect(text.contains(line), "missing: \(line)")
                }
                let age = text.split(separator: "\n").first {
                    $0.hasPrefix(#"linkstr_apns_jwt_age_seconds{key_id="\#(SandboxFixture.keyID)"}"#)
                }
                let seconds = try #require(age.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) })
                #expect(seconds >= 0 && seconds < 60)
                #expect(!text.contains(HTTP2DeliveryTests.token(0x61)), "no device token in labels")
                // The queue gauge counts a short queue exactly; the figures are read at most once
                // a second, so the drained queue shows on a later scrape.
                #expect(
                    try await GatewayHarness.eventually(within: 30) {
                        String(buffer: try await gateway.client.execute(uri: "/metrics", method: .get).body).contains(
                            #"linkstr_queue_jobs{state="queued"} 0"#)
                    })
            }
        }
    }

    /// However often `/readyz` and `/metrics` are asked, the database is read at most once a second.
    @Test func aSnapshotIsRefreshedAtMostOncePerIntervalAndSharedWhileRefreshing() async {
        let clock = ManualInstant()
        let snapshot = ThrottledSnapshot(
            interval: .seconds(1), now: { clock.now },
            refresh: {
                try? await Task.sleep(for: .milliseconds(50))
                return clock.now
            })
        // 100 callers at once share one refresh.
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<100 { group.addTask { _ = await snapshot.value() } }
        }
        #expect(await snapshot.refreshes == 1)
        clock.advance(.milliseconds(999))
        _ = await snapshot.value()
        #expect(await snapshot.refreshes == 1, "still fresh")
        clock.advance(.milliseconds(2))
        _ = await snapshot.value()
        #expect(await snapshot.refreshes == 2, "stale after the interval")
    }

    @Test func probesAndScrapesDoNotEachQueryTheDatabase() async throws {
        try await GatewayHarness.run { gateway in
            let start = ContinuousClock.now
            var statuses: [HTTPResponse.Status] = []
            for _ in 0..<50 {
                statuses.append(try await gateway.send(nil, .get, "/readyz").status)
                _ = try await gateway.send(nil, .get, "/metrics")
            }
            let elapsed = ContinuousClock.now - start
            // A read that misses its deadline on a busy machine answers 503 until the next one.
            #expect(statuses.contains(.ok) && statuses.allSatisfy { $0 == .ok || $0 == .serviceUnavailable }, "\(statuses)")
            let text = String(buffer: try await gateway.send(nil, .get, "/metrics").body)
            let line = text.split(separator: "\n").first { $0.hasPrefix("linkstr_readiness_checks_total ") }
            let checks = try #require(line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) })
            // One read a second at most: the probes' whole span, rounded up, plus the first.
            #expect(checks >= 1 && checks <= Double(elapsed.components.seconds) + 2, "\(checks) reads in \(elapsed)")
        }
    }
}

/// A clock the test moves by hand.
final class ManualInstant: Sendable {
    private let state = Mutex(ContinuousClock.now)
    var now: ContinuousClock.Instant { state.withLock { $0 } }
    func advance(_ duration: Duration) { state.withLock { $0 += duration } }
}
