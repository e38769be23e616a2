/// Failures the sandbox plays on purpose, chosen by the device token's first hex digits so tests
/// and load runs can script APNs behaviour without configuring the sandbox:
///
/// | prefix  | answer |
/// |---------|--------|
/// | `0400`  | 400 `BadDeviceToken`, always |
/// | `0403`  | 403 `ExpiredProviderToken` the first time for the token, then normal |
/// | `0410`  | 410 `Unregistered`, `timestamp` = now |
/// | `0411`  | 410 `Unregistered`, `timestamp` = an hour ago (a re-registration since then wins) |
/// | `0429N` | 429 `TooManyRequests` the first N times (N one hex digit), then normal |
/// | `0500N` | 500 `InternalServerError` the first N times, then normal |
public enum ScriptedFailure: Sendable, Equatable {
    case badDeviceToken
    case expiredProviderTokenOnce
    case unregistered(secondsAgo: Int64)
    case tooManyRequests(times: Int)
    case serverError(times: Int)

    public init?(token: some StringProtocol) {
        // Every prefix is digits and starts with 0, so most tokens are judged by their first byte,
        // and none needs lowercasing (the count digit is read in either case).
        guard token.utf8.first == UInt8(ascii: "0") else { return nil }
        func count(after prefix: String) -> Int? {
            guard token.hasPrefix(prefix), let digit = token.dropFirst(prefix.count).first?.hexDigitValue else { return nil }
            return digit
        }
        if token.hasPrefix("0400") {
            self = .badDeviceToken
        } else if token.hasPrefix("0403") {
            self = .expiredProviderTokenOnce
        } else if token.hasPrefix("0410") {
            self = .unregistered(secondsAgo: 0)
        } else if token.hasPrefix("0411") {
            self = .unregistered(secondsAgo: 3600)
        } else if let times = count(after: "0429") {
            self = .tooManyRequests(times: times)
        } else if let times = count(after: "0500") {
            self = .serverError(times: times)
        } else {
            return nil
        }
    }

    /// How many times it fails before the token behaves normally (nil: every time).
    var failures: Int? {
        switch self {
        case .badDeviceToken, .unregistered: nil
        case .expiredProviderTokenOnce: 1
        case .tooManyRequests(let times), .serverError(let times): times
        }
    }

    /// The answer, at `nowMilliseconds`.
    package func reply(nowMilliseconds: Int64) -> SandboxReply {
        switch self {
        case .badDeviceToken: SandboxReply(status: 400, reason: "BadDeviceToken")
        case .expiredProviderTokenOnce: SandboxReply(status: 403, reason: "ExpiredProviderToken")
        case .unregistered(let secondsAgo):
            SandboxReply(status: 410, reason: "Unregistered", timestampMilliseconds: nowMilliseconds - secondsAgo * 1000)
        case .tooManyRequests: SandboxReply(status: 429, reason: "TooManyRequests")
        case .serverError: SandboxReply(status: 500, reason: "InternalServerError")
        }
    }
}
