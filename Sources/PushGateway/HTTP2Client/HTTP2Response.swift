package import NIOCore

/// A push service's answer to one `HTTP2Request`.
package struct HTTP2Response: Sendable {
    package var status: Int
    package var body: ByteBuffer
    /// The `retry-after` header of an answer other than 200 (FCM's 429 and 503 carry one); nil on
    /// a 200, which is never looked at for it.
    package var retryAfter: String?
    /// From the request's frames being written to the answer's last frame (zero when unknown).
    var elapsed: TimeAmount = .zero

    package init(status: Int, body: ByteBuffer, retryAfter: String? = nil, elapsed: TimeAmount = .zero) {
        self.status = status
        self.body = body
        self.retryAfter = retryAfter
        self.elapsed = elapsed
    }
}
