import NostrProtocol

/// What each FCM HTTP v1 answer means for its job. FCM answers errors as Google's JSON:
/// `{"error": {"code", "message", "status", "details": [...]}}`, where a detail of type
/// `google.firebase.fcm.v1.FcmError` carries FCM's own `errorCode` and a `google.rpc.BadRequest`
/// names the fields it refused.
///
/// | answer | outcome |
/// |---|---|
/// | 200 | delivered |
/// | `UNREGISTERED`, or `INVALID_ARGUMENT` on `message.token` | remove the device |
/// | `SENDER_ID_MISMATCH`, `THIRD_PARTY_AUTH_ERROR`, `APNS_AUTH_ERROR`, `PERMISSION_DENIED`, 404 on the project | configuration error: keep the device |
/// | 401 `UNAUTHENTICATED` | the access token was refused: refresh it and retry |
/// | 429, `QUOTA_EXCEEDED` | retry, no sooner than `Retry-After` |
/// | 5xx | retry with backoff (and `Retry-After` when given) |
/// | anything else (`INVALID_ARGUMENT` on the message) | a sender bug: drop |
public enum FCMResponseClassifier {
    /// The parts of an error answer the outcome depends on.
    public struct ErrorBody: Sendable, Equatable {
        /// FCM's `errorCode` (`UNREGISTERED`, `QUOTA_EXCEEDED`, …).
        public var errorCode: String?
        /// Google's canonical `status` (`INVALID_ARGUMENT`, `PERMISSION_DENIED`, …).
        public var status: String?
        /// A `BadRequest` detail names `message.token`: the token itself was refused.
        public var refusesToken: Bool

        public init(errorCode: String? = nil, status: String? = nil, refusesToken: Bool = false) {
            self.errorCode = errorCode
            self.status = status
            self.refusesToken = refusesToken
        }

        /// Reads Google's error JSON; the codes are kept only when they look like codes (upper
        /// case and `_`), since they become log fields and metric labels.
        public init(parsing bytes: [UInt8]) {
            let error = (try? JSONValue(parsing: bytes))?["error"]
            var errorCode: String?
            var refusesToken = false
            for detail in error?["details"]?.arrayValue ?? [] {
                switch detail["@type"]?.stringValue {
                case "type.googleapis.com/google.firebase.fcm.v1.FcmError":
                    errorCode = detail["errorCode"]?.stringValue.flatMap(FCMResponseClassifier.token)
                case "type.googleapis.com/google.rpc.BadRequest":
                    refusesToken =
                        refusesToken
                        || (detail["fieldViolations"]?.arrayValue ?? []).contains { $0["field"]?.stringValue == "message.token" }
                default:
                    continue
                }
            }
            self.init(
                errorCode: errorCode, status: error?["status"]?.stringValue.flatMap(FCMResponseClassifier.token), refusesToken: refusesToken
            )
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
