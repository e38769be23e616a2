import NIOCore

/// One request: POST `path` on `endpoint` with `headers` (no pseudo-headers) and `body`, on the
/// connection `slot` picks (modulo the number of connections). `HTTP2ConnectionPool` sends it to
/// APNs and to FCM alike.
package struct HTTP2Request: Sendable {
    var endpoint: HTTPSEndpoint
    var slot: Int
    var path: String
    var headers: [(String, String)]
    var body: ByteBuffer
    /// Headers whose value is (nearly) never sent again on the connection. They stay out of the
    /// HPACK dynamic table: indexed, each would evict older entries, among them the
    /// `authorization` value (an APNs provider token, an FCM access token), which both ends would
    /// then Huffman-code again.
    var uniqueHeaders: [String]
}

extension HTTP2Request {
    /// The slot of `job`'s request: its id, so that a job (and every member of a batch, which
    /// share the batch's id) always takes the same connection.
    static func slot(of job: ClaimedJob) -> Int { Int(job.id.magnitude % UInt64(Int.max)) }
}
