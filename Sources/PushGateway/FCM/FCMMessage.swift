package import Foundation
import GatewayWire
package import NostrProtocol

/// One job as an FCM HTTP v1 `messages:send` body, in the shape firebase-admin sends:
/// `{"message": {"token", "data", "notification"?, "android": {"priority", "ttl", "collapse_key"?}}}`.
///
/// - `data` is the notification's `portableFields` as strings (FCM's data map holds only
///   strings), plus `push_id`: the job's id, the same on every retry, so an app can drop a
///   message it already has.
/// - An alert also carries `notification` (the generic title and body), which Android shows
///   without waking the app; priority `high`.
/// - A call is a data message at `high` priority that lives at most 30 seconds, like a VoIP push:
///   the app rings itself, and a call that reaches the phone late is a missed call.
/// - A background push is a data message at `normal` priority.
/// - Collapsing follows the APNs collapse id (the event, or the recipient for a relay-watch
///   alert) in the two ways Android has. On screen: an alert's `android.notification.tag` is its
///   collapse id, so a notification with the same id replaces the one shown, as APNs shows one
///   notification per collapse id. In storage: `collapse_key` only for a relay-watch alert (the
///   recipient), since a burst of "new activity" for one user is worth one message; FCM keeps at
///   most four collapse keys per device and drops the others, so a typed push, whose collapse id
///   is its own event, carries none and each is stored for an offline device, up to FCM's hundred.
package struct FCMMessage: Sendable, Equatable {
    package var body: JSONValue

    package init(_ job: ClaimedJob, token: String, now: Date = Date()) {
        self.init(job, token: token, pushID: job.apnsID.lowercasedString, now: now)
    }

    /// With `pushID` in place of the job's id (`FCMMessageShape` puts a mark there).
    init(_ job: ClaimedJob, token: String, pushID: String, now: Date) {
        let notification = job.notification
        var data: [String: JSONValue] = [:]
        for (key, value) in notification.portableFields {
            switch value {
            case .string: data[key] = value
            case .integer(let number): data[key] = .string(String(number))
            case .bool(let flag): data[key] = .string(flag ? "1" : "0")
            default: continue
            }
        }
        data["push_id"] = .string(pushID)
        let call = notification.type.isCall
        let remaining = max(0, Int64(job.expiresAt.timeIntervalSince(now).rounded(.down)))
        var android: [String: JSONValue] = [
            "priority": notification.background ? "normal" : "high",
            "ttl": .string("\(call ? min(remaining, APNsNotification.voipLifetimeSeconds) : remaining)s"),
        ]
        if notification.type == .giftWrap { android["collapse_key"] = .string(notification.collapseID) }
        var message: [String: JSONValue] = ["token": .string(token), "data": .object(data)]
        if !call && !notification.background {
            message["notification"] = ["title": .string(notification.title), "body": .string(notification.body)]
            android["notification"] = ["tag": .string(notification.collapseID)]
        }
        message["android"] = .object(android)
        body = ["message": .object(message)]
    }
}
