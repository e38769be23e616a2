import NIOCore

/// How APNs requests travel (`APNS_TRANSPORT`): `nio` (default), requests as frames on SwiftNIO
/// HTTP/2 connections (`APNsConnectionPool`); or `async-http-client` (`AsyncHTTPClientTransport`).
/// Both keep `APNS_CONNECTIONS` connections per host open and honour the server's stream limit;
/// the first spends far less CPU per push (docs/performance.md).
protocol APNsTransport: Sendable {
    func send(_ request: APNsRequest) async throws -> APNsStreamResponse
    /// Many requests at once; the outcomes in the requests' order. The default sends each
    /// concurrently through `send(_:)`.
    func send(_ requests: [APNsRequest]) async -> [Result<APNsStreamResponse, any Error>]
    func shutdown() async
}

extension APNsTransport {
    func send(_ requests: [APNsRequest]) async -> [Result<APNsStreamResponse, any Error>] {
        await concurrentlyInOrder(requests) { request in
            do { return .success(try await send(request)) } catch { return .failure(error) }
        }
    }
}

/// One request: POST `path` on `endpoint` with `headers` (no pseudo-headers) and `body`, on the
/// connection `slot` picks (modulo the number of connections).
package struct APNsRequest: Sendable {
    var endpoint: APNsEndpoint
    var slot: Int
    var path: String
    var headers: [(String, String)]
    var body: ByteBuffer
    /// Headers whose value is (nearly) never sent again on the connection. They stay out of the
    /// HPACK dynamic table: indexed, each would evict older entries, among them the provider
    /// token, which both ends would then Huffman-code again.
    var uniqueHeaders: [String]
}

public enum APNsTransportKind: String, Sendable {
    case nio
    case asyncHTTPClient = "async-http-client"
}
