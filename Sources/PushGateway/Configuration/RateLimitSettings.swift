import Foundation

/// API rate limits, per instance: requests per second with a burst, per client IP (checked before
/// anything is parsed or verified) and per authenticated pubkey. `0` turns a limit off.
public struct RateLimitSettings: Sendable, Equatable {
    public struct Limit: Sendable, Equatable {
        public var perSecond: Double
        public var burst: Double

        public init(perSecond: Double, burst: Double) {
            self.perSecond = perSecond
            self.burst = max(burst, 1)
        }
    }

    /// `RATE_LIMIT_IP` (default `100/200`).
    public var perIP: Limit?
    /// `RATE_LIMIT_PUBKEY` (default `20/100`).
    public var perPubkey: Limit?
    /// `RATE_LIMIT_TRUST_FORWARDED=1`: the client IP is the last `X-Forwarded-For` address (the
    /// one the load balancer in front appended); otherwise the connection's peer address.
    public var trustForwardedFor: Bool

    public init(perIP: Limit? = nil, perPubkey: Limit? = nil, trustForwardedFor: Bool = false) {
        self.perIP = perIP
        self.perPubkey = perPubkey
        self.trustForwardedFor = trustForwardedFor
    }

    /// No limits (tests and benchmarks that drive one instance from one address).
    public static let disabled = RateLimitSettings()
    /// What a deployment gets when it sets nothing.
    public static let standard = RateLimitSettings(perIP: Limit(perSecond: 100, burst: 200), perPubkey: Limit(perSecond: 20, burst: 100))

    public static func fromEnvironment(_ env: [String: String]) throws(ConfigurationError) -> RateLimitSettings {
        RateLimitSettings(
            perIP: try parse(env["RATE_LIMIT_IP"], key: "RATE_LIMIT_IP", default: standard.perIP),
            perPubkey: try parse(env["RATE_LIMIT_PUBKEY"], key: "RATE_LIMIT_PUBKEY", default: standard.perPubkey),
            trustForwardedFor: env["RATE_LIMIT_TRUST_FORWARDED"] == "1")
    }

    /// `RATE[/BURST]` (burst defaults to twice the rate), or `0` for no limit.
    static func parse(_ text: String?, key: String, default fallback: Limit?) throws(ConfigurationError) -> Limit? {
        guard let text = text?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return fallback }
        if text == "0" { return nil }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let rate = Double(parts[0]), rate > 0, rate.isFinite else {
            throw ConfigurationError(key: key, "expected requests per second, optionally /burst (for example 100/200), or 0 for no limit")
        }
        var burst = rate * 2
        if parts.count == 2 {
            guard let parsed = Double(parts[1]), parsed >= 1, parsed.isFinite else {
                throw ConfigurationError(key: key, "the burst must be a number ≥ 1")
            }
            burst = parsed
        }
        return Limit(perSecond: rate, burst: burst)
    }
}
