/// Failures the FCM face plays on purpose, chosen by the registration token's first letters, so
/// tests and load runs script FCM without configuring the sandbox (N is one digit):
///
/// | prefix | answer |
/// |---|---|
/// | `unregistered` | 404 `NOT_FOUND`, errorCode `UNREGISTERED` |
/// | `invalid` | 400 `INVALID_ARGUMENT` on the token, as FCM answers it (no field named) |
/// | `badmessage` | 400 `INVALID_ARGUMENT`, a `BadRequest` on `message.android.ttl` (a sender's bug) |
/// | `mismatch` | 403 `PERMISSION_DENIED`, errorCode `SENDER_ID_MISMATCH` |
/// | `thirdparty` | 401 `UNAUTHENTICATED`, errorCode `THIRD_PARTY_AUTH_ERROR` |
/// | `quotaN` | 429 `RESOURCE_EXHAUSTED`, errorCode `QUOTA_EXCEEDED`, `Retry-After: 3`, the first N times |
/// | `unavailableN` | 503 `UNAVAILABLE` the first N times |
/// | `internalN` | 500 `INTERNAL`, errorCode `INTERNAL`, the first N times |
/// | `stall` | no answer: the request is recorded and its stream left open |
package enum FCMScriptedFailure: Sendable, Equatable {
    case unregistered
    case invalidToken
    case invalidMessage
    case senderIDMismatch
    case thirdPartyAuthError
    case quotaExceeded(times: Int)
    case unavailable(times: Int)
    case internalError(times: Int)
    case stall

    package init?(token: String) {
        func count(after prefix: String) -> Int? {
            guard token.hasPrefix(prefix), let digit = token.dropFirst(prefix.count).first?.wholeNumberValue else { return nil }
            return digit
        }
        if token.hasPrefix("unregistered") {
            self = .unregistered
        } else if token.hasPrefix("invalid") {
            self = .invalidToken
        } else if token.hasPrefix("badmessage") {
            self = .invalidMessage
        } else if token.hasPrefix("mismatch") {
            self = .senderIDMismatch
        } else if token.hasPrefix("thirdparty") {
            self = .thirdPartyAuthError
        } else if let times = count(after: "quota") {
            self = .quotaExceeded(times: times)
        } else if let times = count(after: "unavailable") {
            self = .unavailable(times: times)
        } else if let times = count(after: "internal") {
            self = .internalError(times: times)
        } else if token.hasPrefix("stall") {
            self = .stall
        } else {
            return nil
        }
    }

    /// How many times it fails before the token behaves normally (nil: every time).
    var failures: Int? {
        switch self {
        case .unregistered, .invalidToken, .invalidMessage, .senderIDMismatch, .thirdPartyAuthError, .stall: nil
        case .quotaExceeded(let times), .unavailable(let times), .internalError(let times): times
        }
    }

    /// The HTTP status, Google's canonical status, FCM's errorCode (when it sends one) and message;
    /// for a stall, `SandboxFaces.noAnswer`.
    var answer: (status: Int, canonical: String, errorCode: String?, message: String) {
        switch self {
        case .unregistered: (404, "NOT_FOUND", "UNREGISTERED", "Requested entity was not found.")
        case .invalidToken: (400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token")
        case .invalidMessage: (400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Invalid value at 'message.android.ttl'")
        case .senderIDMismatch: (403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH", "SenderId mismatch")
        case .thirdPartyAuthError: (401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR", "Auth error from APNS or Web Push Service")
        case .quotaExceeded: (429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "Quota exceeded for message sending.")
        case .unavailable: (503, "UNAVAILABLE", nil, "The service is currently unavailable.")
        case .internalError: (500, "INTERNAL", "INTERNAL", "Internal error encountered.")
        case .stall: (SandboxFaces.noAnswer, "", nil, "")
        }
    }
}
