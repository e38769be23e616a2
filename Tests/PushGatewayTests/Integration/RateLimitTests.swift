import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NostrProtocol
import PushGateway
import Testing

/// Per-IP and per-pubkey rate limits: token buckets as values, the settings, and the real HTTP
/// server answering 429 with `Retry-After` without storing anything or using up the nonce.
@Suite struct RateLimitTests {
    @Test func aBucketAllowsItsBurstThenRefillsAtItsRate() {
        let limiter = RateLimiter(limit: .init(perSecond: 2, burst: 3))
        let start = ContinuousClock.now
        for _ in 0..<3 { #expect(limiter.take("k", now: start) == nil) }
        let wait = limiter.take("k", now: start)
        #expect(wait == .milliseconds(500), "one token takes half a second at 2/s")
        #expect(limiter.take("other", now: start) == nil, "keys are independent")
        #expect(limiter.take("k", now: start + .milliseconds(500)) == nil)
        #expect(limiter.take("k", now: start + .milliseconds(600)) != nil)
        // After a long idle the bucket is full again, never more than the burst.
        let later = start + .seconds(60)
        for _ in 0..<3 { #expect(limiter.take("k", now: later) == nil) }
        #expect(limiter.take("k", now: later) != nil)
    }

    @Test func bucketsIdleForTwoRefillsAreForgottenWhole() {
        let start = ContinuousClock.now
        let limiter = RateLimiter(limit: .init(perSecond: 10, burst: 10), maxKeys: 1000, now: start)
        for index in 0..<100 { _ = limiter.take("old-\(index)", now: start) }
        // One refill (1 s) later the old buckets move to the previous generation, still kept.
        _ = limiter.take("new", now: start + .seconds(1))
        #expect(limiter.count == 101)
        // Another refill later they were untouched for a full refill, so full again: dropped.
        _ = limiter.take("newer", now: start + .seconds(2))
        #expect(limiter.count == 2, "only the two recent keys remain")
    }

    @Test func aBucketInThePreviousGenerationKeepsItsCount() {
        let start = ContinuousClock.now
        let limiter = RateLimiter(limit: .init(perSecond: 1, burst: 2), maxKeys: 1000, now: start)
        for _ in 0..<2 { #expect(limiter.take("k", now: start) == nil) }
        // Half a token left at 1.5 s; the rotation at 2 s moves "k" to the previous generation,
        // where it must keep that count (a fresh bucket would hold two tokens).
        #expect(limiter.take("k", now: start + .milliseconds(1500)) == nil)
        _ = limiter.take("other", now: start + .seconds(2))
        #expect(limiter.take("k", now: start + .seconds(2)) == nil)
        #expect(limiter.take("k", now: start + .seconds(2)) != nil)
    }

    @Test func aFloodOfDistinctKeysCannotGrowTheTablePastItsCap() {
        let start = ContinuousClock.now
        let limiter = RateLimiter(limit: .init(perSecond: 1, burst: 1000), maxKeys: 1000, now: start)
        for index in 0..<50_000 { _ = limiter.take("flood-\(index)", now: start) }
        #expect(limiter.count <= 1000)
    }

    @Test func aRefundGivesBackOneToken() {
        let start = ContinuousClock.now
        let limiter = RateLimiter(limit: .init(perSecond: 0.001, burst: 1), now: start)
        #expect(limiter.take("k", now: start) == nil)
        #expect(limiter.take("k", now: start) != nil)
        limiter.refund("k")
        #expect(limiter.take("k", now: start) == nil)
    }

    @Test(arguments: [
        ("192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
        ("2001:DB8:1:2::1", "2001:db8:1:2::/64"),
        ("::1", "0:0:0:0::/64"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
    ])
    func clientAddressKeys(address: String, key: String) {
        #expect(ClientAddress.limiterKey(address) == key)
    }

    @Test(arguments: [
        "", "unknown", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.4 ", "2001:db8::1::2", "evil.example", "1.2.3.4:80", "[::1]",
        String(repeating: "1", count: 100),
    ])
    func aForwardedValueThatIsNotAnIPHasNoKey(_ text: String) {
        #expect(ClientAddress.limiterKey(text) == nil)
    }

    @Test func usedAuthorizationsAreKeptForTwoWindowsWithinTheirCap() {
        let start = ContinuousClock.now
        let used = UsedAuthorizations(window: .seconds(10), maxKeys: 100, now: start)
        used.insert("a", now: start)
        used.insert("b", now: start + .seconds(11))
        #expect(used.contains("a") && used.contains("b"), "a moved to the previous generation")
        used.insert("c", now: start + .seconds(22))
        #expect(!used.contains("a") && used.contains("b") && used.contains("c"))
        for index in 0..<10_000 { used.insert("flood-\(index)", now: start + .seconds(22)) }
        #expect(!used.contains("flood-0") && used.contains("flood-9999"), "a full generation rotates early")
    }

    /// A long client-chosen nonce is kept as 32 bytes inline, and keys that differ only at their
    /// end are still told apart.
    @Test func usedAuthorizationsKeepFixedSizeFingerprints() {
        #expect(MemoryLayout<UsedAuthorizations.Fingerprint>.size == 32)
        let nonce = String(repeating: "n", count: HTTPAuth.maxNonceBytes - 1)
        let used = UsedAuthorizations(window: .seconds(10))
        used.insert("pubkey " + nonce + "a")
        #expect(used.contains("pubkey " + nonce + "a"))
        #expect(!used.contains("pubkey " + nonce + "b") && !used.contains("other " + nonce + "a"))
    }

    @Test(arguments: ["/", "/v1/push", "/v1/conversations/archive-state", "/healthz", "/openapi.yaml", "/a/.hidden", "/a/..b", "/x~y_z"])
    func canonicalPaths(_ path: String) {
        #expect(CanonicalPathMiddleware<GatewayRequestContext>.isCanonical(path))
    }

    @Test(arguments: [
        "", "v1/push", "//v1/push", "/v1//push", "/v1/./push", "/v1/../v1/push", "/v1/push/", "/v1/push/.", "/v1/push/..",
        "/v1/%70ush", "/v1/push%2F", "/./v1/push", "/v1/pu sh", "/v1/push?x", "/v1/püsh", "/v1/push\\x",
    ])
    func nonCanonicalPaths(_ path: String) {
        #expect(!CanonicalPathMiddleware<GatewayRequestContext>.isCanonical(path))
    }

    @Test func settingsParseAndRefuseNonsense() throws {
        let defaults = try RateLimitSettings.fromEnvironment([:])
        #expect(defaults.perIP == .init(perSecond: 100, burst: 200) && defaults.perPubkey == .init(perSecond: 20, burst: 100))
        let custom = try RateLimitSettings.fromEnvironment([
            "RATE_LIMIT_IP": "5", "RATE_LIMIT_PUBKEY": "0", "RATE_LIMIT_TRUST_FORWARDED": "1",
        ])
        #expect(custom.perIP == .init(perSecond: 5, burst: 10) && custom.perPubkey == nil && custom.trustForwardedFor)
        #expect(try RateLimitSettings.fromEnvironment(["RATE_LIMIT_IP": "1.5/4"]).perIP == .init(perSecond: 1.5, burst: 4))
        for bad in ["-1", "fast", "5/0", "5/x", "1/2/3", "inf"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try RateLimitSettings.fromEnvironment(["RATE_LIMIT_IP": bad]) }
        }
    }

    @Test func aPubkeyOverItsLimitGets429WithRetryAfterAndKeepsItsNonce() async throws {
        // One token per 10 s: the three requests must not span a refill even on a loaded machine
        // (a full run once took more than 4 s over them).
        let limits = RateLimitSettings(perPubkey: .init(perSecond: 0.1, burst: 2))
        try await GatewayHarness.run(rateLimits: limits) { gateway in
            let alice = Keys.generate(), bob = Keys.generate()
            for seed in UInt8(1)...2 {
                let response = try await gateway.send(
                    alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(seed)))
                #expect(response.status == .accepted)
            }
            let body = GatewayHarness.registerBody(GatewayHarness.token(3))
            let limited = try await gateway.send(alice, .post, "/v1/devices/register", json: body, nonce: "kept-nonce")
            #expect(limited.status == .tooManyRequests && limited.errorMessage == "rate limited")
            let retryAfter = try #require(limited.headers[.retryAfter].flatMap { Int($0) })
            #expect((1...10).contains(retryAfter))
            #expect(try await gateway.count("SELECT count(*)::int FROM devices") == 2, "nothing stored")
            // Another pubkey is not affected.
            #expect(
                try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(4)))
                    .status == .accepted)
            // After Retry-After the same nonce is still good: the refused request did not use it.
            try await Task.sleep(for: .seconds(retryAfter))
            #expect(try await gateway.send(alice, .post, "/v1/devices/register", json: body, nonce: "kept-nonce").status == .accepted)
            #expect(try await gateway.count("SELECT count(*)::int FROM devices") == 4)
        }
    }

    @Test func anAddressOverItsLimitGets429BeforeAnythingIsParsedButHealthIsExempt() async throws {
        // One token per 10 s: the four requests must not span a refill even on a loaded machine.
        let limits = RateLimitSettings(perIP: .init(perSecond: 0.1, burst: 3))
        try await GatewayHarness.run(rateLimits: limits) { gateway in
            for _ in 0..<3 { #expect(try await gateway.send(nil, .post, "/v1/push", json: "{").status == .unauthorized) }
            let limited = try await gateway.send(nil, .post, "/v1/push", json: "{")
            #expect(limited.status == .tooManyRequests)
            #expect(limited.headers[.retryAfter].flatMap { Int($0) }.map { (1...10).contains($0) } == true)
            for _ in 0..<5 {
                #expect(try await gateway.send(nil, .get, "/healthz").status == .ok)
                // Exempt from the limit; whether it is ready is another matter (its database
                // check has a 1.5 s deadline, which a loaded machine can miss).
                #expect(try await gateway.send(nil, .get, "/readyz").status != .tooManyRequests)
            }
            let metrics = try await gateway.send(nil, .get, "/metrics")
            #expect(String(buffer: metrics.body).contains(#"linkstr_rate_limited_total{scope="ip"} 1"#))
        }
    }

    /// A captured header replayed at an instance cannot spend its owner's budget there: not at the
    /// instance that saw it used (refused before the limiter), nor at one that did not (the
    /// database refuses it and the charge is given back).
    @Test func aReplayedHeaderDoesNotUseUpItsPubkeysBudget() async throws {
        let limits = RateLimitSettings(perPubkey: .init(perSecond: 0.001, burst: 2))
        try await TestDatabase.with { url, database in
            let alice = Keys.generate()
            let body = GatewayHarness.registerBody(GatewayHarness.token(0x41))
            let event = HTTPAuth.linkstrEvent(
                keys: alice, method: "POST", path: "/v1/devices/register", body: Array(body.utf8), nonce: "once",
                createdAt: UnixTime.now())
            let header: HTTPFields = [.authorization: HTTPAuth.headerValue(for: event)]
            try await GatewayHarness.run(url: url, database: database, rateLimits: limits) { first in
                #expect(try await first.send(nil, .post, "/v1/devices/register", json: body, headers: header).status == .accepted)
                for _ in 0..<10 {
                    let replay = try await first.send(nil, .post, "/v1/devices/register", json: body, headers: header)
                    #expect(
                        replay.status == .unauthorized && replay.errorMessage == "authorization was already used (replayed nonce or event)")
                }
                #expect(
                    try await first.send(
                        alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x42))
                    ).status == .accepted,
                    "the replays cost alice nothing: one token of two is left")
                #expect(
                    try await first.send(
                        alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x43))
                    ).status == .tooManyRequests)
            }
            try await GatewayHarness.run(url: url, database: database, rateLimits: limits) { second in
                for _ in 0..<10 {
                    let replay = try await second.send(nil, .post, "/v1/devices/register", json: body, headers: header)
                    #expect(replay.status == .unauthorized)
                }
                for seed in UInt8(0x44)...0x45 {
                    #expect(
                        try await second.send(
                            alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(seed))
                        ).status == .accepted,
                        "alice's whole burst is left at an instance that only saw the replays")
                }
                #expect(
                    try await second.send(
                        alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x46))
                    ).status == .tooManyRequests)
            }
        }
    }
}
