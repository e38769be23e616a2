import Crypto
package import Foundation
import GatewayWire
import NostrProtocol

/// One job as a Web Push (or UnifiedPush) message, before encryption: the JSON a service worker
/// or distributor receives, and the RFC 8030 headers that go with it.
///
/// The JSON is the notification's `portableFields`: the type and ids, never content, and the
/// generic text for a service worker to show as it is.
package struct WebPushMessage: Sendable, Equatable {
    package var plaintext: [UInt8]
    /// Seconds the push service may hold the message for an offline device: what is left of the
    /// job's lifetime.
    package var ttl: Int
    package var urgency: String
    /// Replaces an undelivered message with the same topic: the APNs collapse id, hashed into the
    /// 32 base64url characters RFC 8030 §5.4 allows.
    package var topic: String

    package init(_ job: ClaimedJob, now: Date = Date()) {
        let notification = job.notification
        plaintext = Array(JSONValue.object(notification.portableFields).serialized.utf8)
        let remaining = max(0, Int(job.expiresAt.timeIntervalSince(now).rounded(.down)))
        // A call rings now or never: high urgency, and no use to a device that wakes a minute on.
        ttl = notification.type.isCall ? min(remaining, Self.callTTL) : remaining
        urgency = notification.type.isCall ? "high" : notification.background ? "low" : "normal"
        topic = Self.topic(for: notification.collapseID)
    }

    /// How long a push service may hold a call for an offline device.
    static let callTTL = 60

    /// 24 bytes of SHA-256 of the collapse id, base64url: 32 characters, no padding.
    static func topic(for collapseID: String) -> String {
        Base64URL.encode(Array(SHA256.hash(data: Array(collapseID.utf8))).prefix(24))
    }
}
