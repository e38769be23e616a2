package import Foundation
package import NostrProtocol

/// A push service the sandbox plays besides APNs, on the same port under its own path prefix
/// (`/webpush/`, `/fcm/`), over HTTP/2 or HTTP/1.1 alike.
package protocol SandboxFace: Sendable {
    /// `path` is without its query; `authority` is the request's `:authority` or `Host` (the
    /// origin's host and port). A `status` of `SandboxFaces.noAnswer` leaves the request unanswered.
    func answer(
        method: String, path: String, query: [String: String], headers: [(name: String, value: String)], body: [UInt8],
        authority: String, now: Date
    ) -> (status: Int, json: JSONValue?, headers: [(String, String)])
}

package enum SandboxFaces {
    /// The status a face gives a request that must get no answer at all.
    package static let noAnswer = -1
}
