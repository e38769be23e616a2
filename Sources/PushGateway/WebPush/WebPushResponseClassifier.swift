import Foundation
public import NostrProtocol

/// What each answer of a Web Push or UnifiedPush service means for its job (RFC 8030 §5, and
/// what the big push services document).
public enum WebPushResponseClassifier {
    /// `retryAfterSeconds` is the answer's `Retry-After`, when it had one. The outcome's reason
    /// is the status alone: it becomes a metric label, and a push service's own text (any
    /// endpoint a client registers can answer anything) would make those labels unbounded.
    ///
    /// `fromKnownService`: the endpoint is one of the browsers' push services
    /// (`isKnownService`). Only their 401/403 says the gateway's VAPID key or token is refused, a
    /// configuration error for the operator; any other endpoint is whatever a client registered,
    /// and its 401/403 drops the job (the device kept) without raising that alarm.
    public static func classify(
        status: Int, reason: String? = nil, retryAfterSeconds: Double? = nil, fromKnownService: Bool = true
    ) -> PushOutcome {
        let said = "HTTP \(status)"
        switch status {
        // 201 Created is the RFC's answer; some services answer 200 or 202.
        case 200, 201, 202: return .delivered
        // The subscription expired or was unsubscribed: it will never take a message again.
        case 404, 410: return .removeDevice(reason: said, invalidSinceMilliseconds: nil)
        // The gateway's VAPID key or JWT was refused: nothing about the device.
        case 401, 403: return fromKnownService ? .configurationError(reason: said) : .drop(reason: said)
        // Too large: the gateway built a message it should not have. A bug, logged and dropped.
        case 413: return .drop(reason: said)
        case 429: return .retry(reason: said, afterSeconds: retryAfterSeconds)
        case 500...599: return .retry(reason: said, afterSeconds: retryAfterSeconds)
        // No answer at all (connection, TLS, timeout): try again later.
        case 0 where reason == "ConnectionError": return .retry(reason: "ConnectionError")
        default: return .drop(reason: said)
        }
    }

    /// The browsers' push services: Chrome and most Chromium browsers (FCM), Firefox (Mozilla's
    /// autopush), Safari (Apple) and Edge (Windows Push Notification Services).
    static let knownServiceHosts = ["fcm.googleapis.com", "updates.push.services.mozilla.com", "web.push.apple.com"]
    static let knownServiceSuffixes = [".notify.windows.com", ".push.apple.com"]

    /// Whether `host` is one of the browsers' push services.
    public static func isKnownService(_ host: URLHost) -> Bool {
        guard case .name(let name) = host else { return false }
        return knownServiceHosts.contains(name) || knownServiceSuffixes.contains { name.hasSuffix($0) }
    }

    /// `Retry-After` as seconds: delta-seconds, or an HTTP date (RFC 9110 §10.2.3), capped at an
    /// hour so that a hostile service cannot park a job past its lifetime on its word alone.
    public static func retryAfter(_ value: String?, now: Double) -> Double? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Double(value), seconds >= 0 { return min(seconds, 3_600) }
        // Rare (a 429 or 503 that names a date): a formatter per call is fine.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return min(max(0, date.timeIntervalSince1970 - now), 3_600)
    }
}
