package import Foundation
package import NIOCore
import NostrProtocol

/// What the FCM messages of one notification with one expiry share: everything but the token and
/// the push id. The devices of a typed push come to the sender together, so the body is built and
/// serialized once per push (`FCMMessage` with a mark in place of each), split at the marks, and
/// each device's message is the pieces with its own two values between them: three copies, not a
/// JSON tree built and written per device.
///
/// A notification whose own fields hold a mark (its ids come from the pushing client), or a token
/// JSON would have to escape, gets no pieces: `body` answers nil and the caller builds that
/// message whole.
package struct FCMMessageShape {
    private let notification: APNsNotification
    private let expiresAt: Date
    /// The body before, between and after the two values, and whether the token is the first.
    private let pieces: (first: [UInt8], middle: [UInt8], last: [UInt8], tokenFirst: Bool)?

    package static let tokenMark = "fcm-shape-token-5c1d9e0b"
    package static let pushIDMark = "fcm-shape-push-id-5c1d9e0b"

    package init(job: ClaimedJob, now: Date) {
        notification = job.notification
        expiresAt = job.expiresAt
        let body = Array(FCMMessage(job, token: Self.tokenMark, pushID: Self.pushIDMark, now: now).body.serialized.utf8)
        let tokenAt = body.ranges(of: Array(Self.tokenMark.utf8))
        let pushIDAt = body.ranges(of: Array(Self.pushIDMark.utf8))
        guard tokenAt.count == 1, pushIDAt.count == 1 else {
            pieces = nil
            return
        }
        let token = tokenAt[0], pushID = pushIDAt[0]
        let tokenFirst = token.lowerBound < pushID.lowerBound
        let (one, two) = tokenFirst ? (token, pushID) : (pushID, token)
        pieces = (Array(body[..<one.lowerBound]), Array(body[one.upperBound..<two.lowerBound]), Array(body[two.upperBound...]), tokenFirst)
    }

    /// Whether `job`'s message is this one's but for its token and push id (`FCMMessage` reads
    /// nothing else of a job, and `now` is the round's).
    package func fits(_ job: ClaimedJob) -> Bool {
        job.expiresAt == expiresAt && job.notification == notification
    }

    /// The message to `token` with `pushID`, byte for byte what `FCMMessage` serializes; nil when
    /// this shape has no pieces or the token needs escaping.
    package func body(token: String, pushID: String) -> ByteBuffer? {
        guard let pieces, token.utf8.allSatisfy(Self.isPlain), pushID.utf8.allSatisfy(Self.isPlain) else { return nil }
        let (one, two) = pieces.tokenFirst ? (token, pushID) : (pushID, token)
        var buffer = ByteBuffer()
        buffer.reserveCapacity(pieces.first.count + pieces.middle.count + pieces.last.count + token.utf8.count + pushID.utf8.count)
        buffer.writeBytes(pieces.first)
        buffer.writeString(one)
        buffer.writeBytes(pieces.middle)
        buffer.writeString(two)
        buffer.writeBytes(pieces.last)
        return buffer
    }

    /// A byte JSON writes as it is inside a string (anything but `"`, `\` and controls).
    private static func isPlain(_ byte: UInt8) -> Bool { byte >= 0x20 && byte != 0x22 && byte != 0x5C }
}
