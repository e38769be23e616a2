public import Foundation

/// One provider token per (key id, team id), shared by every worker and connection.
///
/// Apple rejects tokens older than an hour (403 `ExpiredProviderToken`) and throttles tokens
/// refreshed more often than every 20 minutes (429 `TooManyProviderTokenUpdates`), so a token is
/// reused until `refreshAfter` (clamped to 20…55 minutes) and a forced refresh after a 403 is
/// honoured only once the current token is at least 20 minutes old.
public actor APNsTokenCache {
    public static let minimumAge: TimeInterval = 20 * 60
    public static let maximumAge: TimeInterval = 55 * 60

    private let signer: APNsTokenSigner
    private let now: @Sendable () -> Date
    private let refreshAfter: TimeInterval
    private var current: (token: String, issuedAt: Date)?

    public init(signer: APNsTokenSigner, refreshAfter: TimeInterval = 50 * 60, now: @escaping @Sendable () -> Date = Date.init) {
        self.signer = signer
        self.now = now
        self.refreshAfter = min(max(refreshAfter, Self.minimumAge), Self.maximumAge)
    }

    /// The token to send now.
    public func token() throws -> String {
        let time = now()
        if let current, time.timeIntervalSince(current.issuedAt) < refreshAfter, time >= current.issuedAt {
            return current.token
        }
        return try issue(at: time)
    }

    /// After a 403 `ExpiredProviderToken` for `rejected`: a new token when the rule allows it.
    /// Returns whether a new token was issued.
    @discardableResult
    public func refresh(rejected: String) throws -> Bool {
        let time = now()
        guard let current, current.token == rejected else { return true } // someone already refreshed
        guard time.timeIntervalSince(current.issuedAt) >= Self.minimumAge else { return false }
        _ = try issue(at: time)
        return true
    }

    /// Age of the current token in seconds (nil before the first one).
    public func age() -> TimeInterval? {
        current.map { now().timeIntervalSince($0.issuedAt) }
    }

    private func issue(at time: Date) throws -> String {
        let token = try signer.token(issuedAt: time)
        current = (token, time)
        return token
    }
}
