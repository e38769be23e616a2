/// Why no FCM access token could be had.
public enum FCMTokenError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The token endpoint refused the account (a revoked key, a deleted account): the operator's
    /// configuration, not something retrying mends.
    case rejected(String)
    /// The endpoint could not be reached or answered 429/5xx: try again later.
    case unavailable(String)

    public var description: String {
        switch self {
        case .rejected(let reason): "token exchange refused: \(reason)"
        case .unavailable(let reason): "token exchange failed: \(reason)"
        }
    }
}
