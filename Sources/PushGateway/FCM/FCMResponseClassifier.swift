import NostrProtocol

/// What each FCM HTTP v1 answer means for its job. FCM answers errors as Google's JSON:
/// `{"error": {"code", "message", "status", "details": [...]}}`, where a detail of type
/// `google.firebase.fcm.v1.FcmError` carries FCM's own `errorCode` and a `google.rpc.BadRequest`
/// names the fields it refused.
///
/// | answer | outcome |
/// |---|---|
/// | 200 | delivered |
/// | `UNREGISTERED`, or `INVALID_ARGUMENT` on the token | remove the device |
/// | `SENDER_ID_MISMATCH`, `THIRD_PARTY_AUTH_ERROR`, `APNS_AUTH_ERROR`, `PERMISSION_DENIED`, 404 on the project | configuration error: keep the device |
/// | 401 `UNAUTHENTICATED` | the access token was refused: refresh it and retry |
/// | 429, `QUOTA_EXCEEDED` | retry, no sooner than `Retry-After` |
/// | 5xx | retry with backoff (and `Retry-After` when given) |
/// | anything else (`INVALID_ARGUMENT` on another field) | a sender bug: drop |
public enum FCMResponseClassifier {
    /// The parts of an error answer the outcome depends on.
    public struct ErrorBody: Sendable, Equatable {
        /// FCM's `errorCode` (`UNREGISTERED`, `QUOTA_EXCEEDED`, …).
        public var errorCode: String?
        /// Google's canonical `status` (`INVALID_ARGUMENT`, `PERMISSION_DENIED`, …).
        public var status: String?
        /// The token itself was refused: a `BadRequest` detail names `message.token`, or, as FCM
        /// answers a malformed or foreign token in practice, no detail names a field and the
        /// message speaks of the registration token.
        public var refusesToken: Bool

        public init(errorCode: String? = nil, status: String? = nil, refusesToken: Bool = false) {
            self.errorCode = errorCode
            self.status = status
            self.refusesToken = refusesToken
        }

        /// Reads Google's error JSON. Codes the gateway does not know become `OTHER`: they are log
        /// fields and metric labels, and an endpoint must not make those unbounded.
        public init(parsing bytes: [UInt8]) {
            let error = (try? JSONValue(parsing: bytes))?["error"]
            var errorCode: String?
            var fields: [String] = []
            for detail in error?["details"]?.arrayValue ?? [] {
                switch detail["@type"]?.stringValue {
                case "type.googleapis.com/google.firebase.fcm.v1.FcmError":
                    errorCode = Self.known(detail["errorCode"]?.stringValue)
                case "type.googleapis.com/google.rpc.BadRequest":
                    fields += (detail["fieldViolations"]?.arrayValue ?? []).compactMap { $0["field"]?.stringValue }
                default:
                    continue
                }
            }
            // The message is read for this one fact and never kept: it is the service's own text.
            let namesToken = (error?["message"]?.stringValue ?? "").lowercased().contains("registration token")
            self.init(
                errorCode: errorCode, status: Self.known(error?["status"]?.stringValue),
                refusesToken: fields.contains("message.token") || (fields.isEmpty && namesToken))
        }

        /// Google's and FCM's codes the gateway knows.
        static let knownCodes: Set<String> = [
            "UNREGISTERED", "INVALID_ARGUMENT", "SENDER_ID_MISMATCH", "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL",
            "THIRD_PARTY_AUTH_ERROR", "APNS_AUTH_ERROR", "UNSPECIFIED_ERROR", "PERMISSION_DENIED", "NOT_FOUND", "UNAUTHENTICATED",
            "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "DEADLINE_EXCEEDED",
        ]

        static func known(_ text: String?) -> String? {
            guard let text else { return nil }
            return knownCodes.contains(text) ? text : "OTHER"
        }

        /// What the log and metrics call it: the most specific code, or nil.
        public var reason: String? { errorCode ?? status }
    }

    public static func classify(status: Int, error: ErrorBody = ErrorBody(), retryAfterSeconds: Double? = nil) -> PushOutcome {
        let reason = error.reason ?? "HTTP \(status)"
        if status == 200 { return .delivered }
        switch error.errorCode {
        case "UNREGISTERED": return .removeDevice(reason: reason, invalidSinceMilliseconds: nil)
        case "SENDER_ID_MISMATCH", "THIRD_PARTY_AUTH_ERROR", "APNS_AUTH_ERROR": return .configurationError(reason: reason)
        case "QUOTA_EXCEEDED": return .retry(reason: reason, afterSeconds: retryAfterSeconds)
        default: break
        }
        if error.refusesToken && (error.errorCode == "INVALID_ARGUMENT" || error.status == "INVALID_ARGUMENT") {
            return .removeDevice(reason: reason, invalidSinceMilliseconds: nil)
        }
        switch status {
        case 401: return .refreshTokenAndRetry(reason: reason)
        // The account may not send for this project, or the project is not there: nothing about the device.
        case 403, 404: return .configurationError(reason: reason)
        case 429, 500...599: return .retry(reason: reason, afterSeconds: retryAfterSeconds)
        default: return .drop(reason: reason)
        }
    }

    /// `text` when it is a code: 1 to 40 of `A`–`Z`, `a`–`z`, `0`–`9`, `_`; otherwise nil.
    static func token(_ text: String) -> String? {
        guard (1...40).contains(text.utf8.count),
            text.utf8.allSatisfy({ ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F })
        else { return nil }
        return text
    }
}
