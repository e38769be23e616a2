/// What a gateway does with one APNs answer (see ../shared/spec/apns.md).
public enum APNsOutcome: Sendable, Equatable {
    case delivered
    /// The token is dead: remove the device (for 410, only if it was not re-registered after
    /// `invalidSince`, Apple's timestamp in milliseconds).
    case removeDevice(reason: String, invalidSinceMilliseconds: Int64?)
    /// The provider token was rejected as expired: refresh it (rules permitting) and retry.
    case refreshTokenAndRetry(reason: String)
    /// Back off and retry (429, 5xx, connection problems).
    case retry(reason: String)
    /// A sender bug or a permanent refusal: count it and drop the job.
    case drop(reason: String)
}

public enum APNsResponseClassifier {
    static let removeReasons: Set<String> = ["BadDeviceToken", "DeviceTokenNotForTopic", "TopicDisallowed", "Unregistered", "ExpiredToken"]

    /// `status` and the `reason` from Apple's JSON body (nil on 200 or an empty body).
    public static func classify(status: Int, reason: String?, timestampMilliseconds: Int64? = nil) -> APNsOutcome {
        let reason = reason ?? ""
        switch status {
        case 200: return .delivered
        case 410: return .removeDevice(reason: reason.isEmpty ? "Unregistered" : reason, invalidSinceMilliseconds: timestampMilliseconds)
        case 400 where removeReasons.contains(reason): return .removeDevice(reason: reason, invalidSinceMilliseconds: nil)
        case 403 where reason == "ExpiredProviderToken": return .refreshTokenAndRetry(reason: reason)
        case 429, 500, 502, 503, 504: return .retry(reason: reason.isEmpty ? "HTTP \(status)" : reason)
        // No answer from APNs (connection, TLS, timeout): try again later.
        case 0 where reason == "ConnectionError": return .retry(reason: reason)
        default: return .drop(reason: reason.isEmpty ? "HTTP \(status)" : reason)
        }
    }
}
