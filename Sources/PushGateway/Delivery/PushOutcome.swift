/// What the gateway does with one push service answer (APNs: docs/apns.md; Web Push: RFC 8030).
public enum PushOutcome: Sendable, Equatable {
    case delivered
    /// The token or subscription is dead: remove the device (for APNs's 410, only if it was not
    /// re-registered after `invalidSince`, Apple's timestamp in milliseconds).
    case removeDevice(reason: String, invalidSinceMilliseconds: Int64?)
    /// The provider token was rejected as expired: refresh it (rules permitting) and retry.
    case refreshTokenAndRetry(reason: String)
    /// Back off and retry (429, 5xx, connection problems); no sooner than `afterSeconds` when the
    /// service said so (`Retry-After`).
    case retry(reason: String, afterSeconds: Double? = nil)
    /// A sender bug or a permanent refusal: count it and drop the job.
    case drop(reason: String)
    /// The operator's configuration is wrong (topic, key, certificate, environment, VAPID key):
    /// nothing about the device. Drop the job, count it, log it at error level and keep the
    /// device; removing devices here would wipe every registration over one bad setting.
    case configurationError(reason: String)
}
