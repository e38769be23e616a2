/// What each APNs answer means for its job (docs/apns.md).
public enum APNsResponseClassifier {
    /// 400 answers that say the token itself is bad. Any 410 also removes it (`Unregistered`,
    /// `ExpiredToken`), under the timestamp rule.
    static let removeReasons: Set<String> = ["BadDeviceToken", "DeviceTokenNotForTopic"]
    /// Answers about the gateway's own topic, key or certificate (docs/apns.md, 400 and 403).
    static let configurationReasons: Set<String> = [
        "TopicDisallowed", "BadTopic", "MissingTopic", "InvalidProviderToken", "MissingProviderToken", "BadCertificate",
        "BadCertificateEnvironment", "Forbidden", "UnrelatedKeyIdInToken", "BadEnvironmentKeyIdInToken",
    ]

    /// `status` and the `reason` from Apple's JSON body (nil on 200 or an empty body).
    public static func classify(status: Int, reason: String?, timestampMilliseconds: Int64? = nil) -> PushOutcome {
        let reason = reason ?? ""
        switch status {
        case 200: return .delivered
        case 410: return .removeDevice(reason: reason.isEmpty ? "Unregistered" : reason, invalidSinceMilliseconds: timestampMilliseconds)
        case 400 where removeReasons.contains(reason): return .removeDevice(reason: reason, invalidSinceMilliseconds: nil)
        case 403 where reason == "ExpiredProviderToken": return .refreshTokenAndRetry(reason: reason)
        case 400 where configurationReasons.contains(reason), 403 where configurationReasons.contains(reason):
            return .configurationError(reason: reason)
        case 429, 500, 502, 503, 504: return .retry(reason: reason.isEmpty ? "HTTP \(status)" : reason)
        // No answer from APNs (connection, TLS, timeout): try again later.
        case 0 where reason == "ConnectionError": return .retry(reason: reason)
        // The job's app has no APNs key here: the operator's configuration, not the device's.
        case 0 where reason == "TopicNotConfigured": return .configurationError(reason: reason)
        default: return .drop(reason: reason.isEmpty ? "HTTP \(status)" : reason)
        }
    }
}
