import Foundation
import NostrRelay
import PushGateway
import Testing

/// The console's parts as values: the push-rate window, the sign-in form and cookie, the page.
@Suite struct ConsoleValueTests {
    @Test func theWindowKeepsTheLastBucketsPerOutcomeAndForgetsOlderOnes() {
        var window = PushRateWindow(bucketSeconds: 10, bucketCount: 6)
        let start = 1_000_000.0
        window.record("delivered", count: 3, at: start)
        window.record("delivered", at: start + 9.9)
        window.record("retry", count: 2, at: start + 25)
        #expect(window.series(endingAt: start + 55) == ["delivered": [4, 0, 0, 0, 0, 0], "retry": [0, 0, 2, 0, 0, 0]])
        // One bucket later the first has left the window; its slot is reused without the old counts.
        window.record("delivered", at: start + 60)
        #expect(window.series(endingAt: start + 60) == ["delivered": [0, 0, 0, 0, 0, 1], "retry": [0, 2, 0, 0, 0, 0]])
        // Long after, nothing is left, whatever the slots still hold.
        #expect(window.series(endingAt: start + 1000).isEmpty)
        // The first bucket's slot now holds a later bucket: a window over the past finds nothing there.
        #expect(window.series(endingAt: start + 5).isEmpty)
    }

    @Test func theWindowHandlesTimesBeforeTheEpochBucketBoundary() {
        var window = PushRateWindow(bucketSeconds: 10, bucketCount: 3)
        window.record("delivered", at: -5)
        #expect(window.series(endingAt: -1) == ["delivered": [0, 0, 1]])
    }

    /// Times and ages are the process's own, but a bad one must not trap in a conversion.
    @Test func timesThatAreNotFiniteDoNotTrap() {
        var window = PushRateWindow(bucketSeconds: 10, bucketCount: 3)
        window.record("delivered", at: .nan)
        window.record("delivered", at: .infinity)
        window.record("delivered", at: -1e300)
        #expect(window.series(endingAt: .nan) == ["delivered": [0, 0, 3]])
        var snapshot = Self.snapshot()
        snapshot.queue = QueueDepth(queued: 1, due: 1, oldestJobAgeSeconds: .infinity)
        #expect(ConsolePage.render(snapshot).contains(#"data-field="queue-oldest">0 s<"#))
        snapshot.queue = QueueDepth(queued: 1, due: 1, oldestJobAgeSeconds: 1e300)
        #expect(ConsolePage.render(snapshot).contains(#"data-field="queue-oldest">11574074 d 1 h<"#))
    }

    @Test func theFormDecodesPlusPercentAndRefusesBrokenEscapes() throws {
        #expect(try FormBody.parse(Array("token=a+b%2Bc%26d%3D&x=".utf8)) == ["token": "a b+c&d=", "x": ""])
        #expect(try FormBody.parse(Array("token=%E2%9C%93".utf8)) == ["token": "✓"])
        #expect(try FormBody.parse([]) == [:])
        for broken in ["token=%", "token=%4", "token=%zz", "token=%FF"] {
            #expect(throws: FormBody.Unreadable.self, "\(broken)") { try FormBody.parse(Array(broken.utf8)) }
        }
    }

    @Test func aSessionCookieIsTheTokensUntilItExpires() throws {
        let session = AdminSession(adminToken: "admin-secret", secure: true)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let setCookie = session.cookie(now: now)
        #expect(
            setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict") && setCookie.contains("Secure")
                && setCookie.contains("Path=/admin"))
        #expect(!setCookie.contains("admin-secret"), "the cookie holds no secret")
        let pair = try #require(setCookie.split(separator: ";").first.map(String.init))
        #expect(session.accepts(cookieHeader: "other=1; \(pair)", now: now))
        #expect(session.accepts(cookieHeader: pair, now: now.addingTimeInterval(AdminSession.lifetime - 1)))
        #expect(!session.accepts(cookieHeader: pair, now: now.addingTimeInterval(AdminSession.lifetime + 1)), "expired")
        #expect(!AdminSession(adminToken: "rotated", secure: true).accepts(cookieHeader: pair, now: now), "a new token ends old sessions")
        // A forged expiry far in the future, and a tampered signature, are refused.
        let signature = pair.split(separator: ".").last.map(String.init) ?? ""
        #expect(!session.accepts(cookieHeader: "\(AdminSession.cookieName)=9999999999.\(signature)", now: now))
        #expect(!session.accepts(cookieHeader: String(pair.dropLast()) + (pair.hasSuffix("0") ? "1" : "0"), now: now))
        #expect(!session.accepts(cookieHeader: nil, now: now) && !session.accepts(cookieHeader: "\(AdminSession.cookieName)=", now: now))
        #expect(!AdminSession(adminToken: "t", secure: false).cookie(now: now).contains("Secure"))
        #expect(session.clearingCookie.contains("Max-Age=0"))
    }

    static func snapshot(relayError: String = "connection refused", failureReason: String = "BadDeviceToken") -> ConsoleSnapshot {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        var rates = PushRateWindow.console
        rates.record("delivered", count: 120, at: now.timeIntervalSince1970 - 30)
        rates.record("device_removed", count: 2, at: now.timeIntervalSince1970 - 5)
        var statistics = RelayStatistics()
        statistics.events = 10
        let relays = [
            RelayWatcher.WatchedRelay(
                url: "wss://relay.example", state: .connected, lastEventAt: now.addingTimeInterval(-75), statistics: statistics,
                livePubkeys: 4),
            RelayWatcher.WatchedRelay(
                url: "wss://down.example", state: .failed(relayError), lastEventAt: nil, statistics: RelayStatistics(), livePubkeys: 0),
        ]
        return ConsoleSnapshot(
            generatedAt: now, ready: true, readinessProblem: nil, uptimeSeconds: 3725, migrationApplied: 9, migrationExpected: 9,
            queue: QueueDepth(queued: 7, due: 3, oldestJobAgeSeconds: 42.5), pushRates: rates,
            watch: RelayWatcher.Status(relays: relays, shards: [0, 3], watchedPubkeys: 12, pendingSightings: 1),
            recentFailures: [
                .init(
                    at: now.addingTimeInterval(-10), platform: "apns", status: 410, reason: failureReason, outcome: "device_removed",
                    redactedToken: "abcd…ef01")
            ])
    }

    @Test func thePageShowsEveryFigureWithItsField() {
        let html = ConsolePage.render(Self.snapshot())
        for expected in [
            #"data-field="readiness">ready<"#, #"data-field="uptime">1 h 2 m<"#, #"data-field="migration">9 of 9<"#,
            #"data-field="queue-queued">7<"#, #"data-field="queue-due">3<"#, #"data-field="queue-oldest">42 s<"#,
            #"<tr data-outcome="delivered">"#, #"data-field="pushes-total">120<"#, #"data-field="pushes-per-second">2.00<"#,
            #"<tr data-relay="wss://relay.example">"#, #"data-field="relay-state">connected<"#,
            #"data-field="relay-last-event">1 m 15 s ago<"#,
            #"data-field="shards">0, 3<"#, "abcd…ef01", #"<meta http-equiv="refresh" content="5">"#, "<polyline",
        ] {
            #expect(html.contains(expected), "missing: \(expected)")
        }
        #expect(!html.contains("<script"), "no scripts")
        #expect(!html.contains("http://") && !html.contains("https://"), "no external assets")
    }

    /// A relay's error and an APNs reason are remote text: they reach the page escaped.
    @Test func textFromOutsideIsEscaped() {
        let html = ConsolePage.render(Self.snapshot(relayError: #"<script>alert(1)</script>"#, failureReason: #"" onmouseover="x"#))
        #expect(!html.contains("<script>alert"))
        #expect(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        #expect(html.contains("&quot; onmouseover=&quot;x"))
        #expect(ConsolePage.escape("a\u{0}b&'") == "a\u{FFFD}b&amp;&#39;")
    }

    @Test func anEmptyInstanceSaysSoRatherThanShowingBlanks() {
        var snapshot = Self.snapshot()
        snapshot.ready = false
        snapshot.readinessProblem = "database unreachable"
        snapshot.migrationApplied = nil
        snapshot.queue = nil
        snapshot.pushRates = .console
        snapshot.watch = nil
        snapshot.recentFailures = []
        let html = ConsolePage.render(snapshot)
        for expected in [
            #"data-field="readiness">not ready<"#, "not ready: database unreachable", "unknown (needs 9)",
            #"data-field="queue-unavailable""#,
            #"data-field="pushes-none""#, #"data-field="watch-off""#, #"data-field="failures-none""#,
        ] {
            #expect(html.contains(expected), "missing: \(expected)")
        }
    }
}
