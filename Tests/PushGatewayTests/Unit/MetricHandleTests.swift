import Foundation
import PushGateway
import Testing

/// The gateway's per-push and per-request metrics keep one handle per label set: counts add up in
/// the exposition as when every count made its own handle, the method label keeps to a fixed
/// set, and the handle cache stops growing at its capacity.
struct MetricHandleTests {
    static func exposition(_ metrics: GatewayMetrics) async -> String {
        String(decoding: await metrics.exposition(), as: UTF8.self)
    }

    @Test func countsWithTheSameLabelsAddUpOnOneSeries() async {
        let metrics = GatewayMetrics()
        for _ in 0..<3 { metrics.push(outcome: "delivered", reason: nil) }
        metrics.push(outcome: "delivered", reason: nil, count: 40)
        metrics.push(outcome: "retry", reason: "TooManyRequests", count: 2)
        metrics.push(outcome: "retry", reason: "InternalServerError")
        for _ in 0..<5 { metrics.request(route: "/v1/push", method: "POST", status: 202) }
        metrics.request(route: "/v1/push", method: "POST", status: 400)
        for status in [200, 200, 410] { metrics.apnsSend(status: status, duration: .milliseconds(3)) }
        let text = await Self.exposition(metrics)
        for line in [
            #"linkstr_pushes_total{outcome="delivered",reason="none"} 43"#,
            #"linkstr_pushes_total{outcome="retry",reason="TooManyRequests"} 2"#,
            #"linkstr_pushes_total{outcome="retry",reason="InternalServerError"} 1"#,
            #"linkstr_http_requests_total{route="/v1/push",method="POST",status="202"} 5"#,
            #"linkstr_http_requests_total{route="/v1/push",method="POST",status="400"} 1"#,
            #"linkstr_apns_send_duration_seconds_count{status="200"} 2"#,
            #"linkstr_apns_send_duration_seconds_count{status="410"} 1"#,
        ] {
            #expect(text.contains(line), "missing: \(line)\n\(text)")
        }
        // The console's window counts what the counter counts.
        let now = Date().timeIntervalSince1970
        #expect(metrics.recentPushRates.series(endingAt: now)["delivered"]?.reduce(0, +) == 43)
    }

    /// A client chooses the method it sends; a method outside the usual set is counted as `other`,
    /// so requests with made-up methods add no series.
    @Test func anUnusualMethodIsCountedAsOther() async {
        let metrics = GatewayMetrics()
        for method in ["PROPFIND", "MKCOL", "SEARCH"] { metrics.request(route: "unmatched", method: method, status: 404) }
        metrics.request(route: "unmatched", method: "GET", status: 404)
        let text = await Self.exposition(metrics)
        #expect(text.contains(#"linkstr_http_requests_total{route="unmatched",method="other",status="404"} 3"#), "\(text)")
        #expect(text.contains(#"linkstr_http_requests_total{route="unmatched",method="GET",status="404"} 1"#), "\(text)")
        #expect(!text.contains("PROPFIND"))
    }

    @Test func theCacheKeepsOneHandlePerKeyUpToItsCapacity() {
        final class Handle: Sendable {}
        let cache = MetricHandleCache<Int, Handle>(capacity: 2)
        var made = 0
        func handle(_ key: Int) -> Handle {
            cache.handle(key) {
                made += 1
                return Handle()
            }
        }
        let first = handle(1)
        #expect(handle(1) === first)
        _ = handle(2)
        #expect(made == 2)
        #expect(cache.count == 2)
        // Past the capacity: a handle each time, none kept.
        #expect(handle(3) !== handle(3))
        #expect(made == 4)
        #expect(cache.count == 2)
        #expect(handle(2) === handle(2))
        #expect(made == 4)
    }
}
