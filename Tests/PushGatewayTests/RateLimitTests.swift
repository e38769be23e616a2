import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NostrProtocol
@testable import PushGateway
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

    @Test func idleBucketsAreDroppedWhenTheTableGrows() {
        let limiter = RateLimiter(limit: .init(perSecond: 10, burst: 10), maxKeys: 100)
        let start = ContinuousClock.now
        for index in 0..<100 { _ = limiter.take("old-\(index)", now: start) }
        _ = limiter.take("new", now: start + .seconds(5))
        #expect(limiter.count == 1, "buckets idle for a full refill are forgotten")
    }

    @Test func settingsParseAndRefuseNonsense() throws {
        let defaults = try RateLimitSettings.fromEnvironment([:])
        #expect(defaults.perIP == .init(perSecond: 100, burst: 200) && defaults.perPubkey == .init(perSecond: 20, burst: 100))
        let custom = try RateLimitSettings.fromEnvironment(["RATE_LIMIT_IP": "5", "RATE_LIMIT_PUBKEY": "0", "RATE_LIMIT_TRUST_FORWARDED": "1"])
        #expect(custom.perIP == .init(perSecond: 5, burst: 10) && custom.perPubkey == nil && custom.trustForwardedFor)
        #expect(try RateLimitSettings.fromEnvironment(["RATE_LIMIT_IP": "1.5/4"]).perIP == .init(perSecond: 1.5, burst: 4))
        for bad in ["-1", "fast", "5/0", "5/x", "1/2/3", "inf"] {
            #expect(throws: ConfigurationError.self, "\(bad)") { try RateLimitSettings.fromEnvironment(["RATE_LIMIT_IP": bad]) }
        }
    }

    @Test func aPubkeyOverItsLimitGets429WithRetryAfterAndKeepsItsNonce() async throws {
        // One token per 4 s: the three requests must not span a refill even on a loaded machine.
        let limits = RateLimitSettings(perPubkey: .init(perSecond: 0.25, burst: 2))
        try await GatewayHarness.run(rateLimits: limits) { gateway in
            let alice = Keys.generate(), bob = Keys.generate()
            for seed in UInt8(1)...2 {
                let response = try await gateway.send(alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(seed)))
                #expect(response.status == .accepted)
            }
            let body = GatewayHarness.registerBody(GatewayHarness.token(3))
            let limited = try await gateway.send(alice, .post, "/v1/devices/register", json: body, nonce: "kept-nonce")
            #expect(limited.status == .tooManyRequests && limited.errorMessage == "rate limited")
            let retryAfter = try #require(limited.headers[.retryAfter].flatMap { Int($0) })
            #expect((1...4).contains(retryAfter))
            #expect(try await gateway.count("SELECT count(*)::int FROM devices") == 2, "nothing stored")
            // Another pubkey is not affected.
            #expect(try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(4))).status == .accepted)
            // After Retry-After the same nonce is still good: the refused request did not use it.
            try await Task.sleep(for: .seconds(retryAfter))
            #expect(try await gateway.send(alice, .post, "/v1/devices/register", json: body, nonce: "kept-nonce").status == .accepted)
            #expect(try await gateway.count("SELECT count(*)::int FROM devices") == 4)
        }
    }

    @Test func anAddressOverItsLimitGets429BeforeAnythingIsParsedButHealthIsExempt() async throws {
        // One token per 4 s: the four requests must not span a refill even on a loaded machine.
        let limits = RateLimitSettings(perIP: .init(perSecond: 0.25, burst: 3))
        try await GatewayHarness.run(rateLimits: limits) { gateway in
            for _ in 0..<3 { #expect(try await gateway.send(nil, .post, "/v1/push", json: "{").status == .unauthorized) }
            let limited = try await gateway.send(nil, .post, "/v1/push", json: "{")
            #expect(limited.status == .tooManyRequests)
            #expect(limited.headers[.retryAfter].flatMap { Int($0) }.map { (1...4).contains($0) } == true)
            for _ in 0..<5 {
                #expect(try await gateway.send(nil, .get, "/healthz").status == .ok)
                #expect(try await gateway.send(nil, .get, "/readyz").status == .ok)
            }
            let metrics = try await gateway.send(nil, .get, "/metrics")
            #expect(String(buffer: metrics.body).contains(#"linkstr_rate_limited_total{scope="ip"} 1"#))
        }
    }
}
