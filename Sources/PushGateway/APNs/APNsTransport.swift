import NIOCore

/// How APNs requests travel (`APNS_TRANSPORT`): `nio` (default), requests as frames on SwiftNIO
/// HTTP/2 connections (`HTTP2ConnectionPool`); or `async-http-client` (`AsyncHTTPClientTransport`).
/// Both keep `APNS_CONNECTIONS` connections per host open and honour the server's stream limit;
/// the first spends far less CPU per push (docs/performance.md).
protocol APNsTransport: Sendable {
    func send(_ request: HTTP2Request) async throws -> HTTP2Response
    /// Many requests at once; the outcomes in the requests' order. The default sends each
    /// concurrently through `send(_:)`.
    func send(_ requests: [HTTP2Request]) async -> [Result<HTTP2Response, any Error>]
    func shutdown() async
}

extension APNsTransport {
    func send(_ requests: [HTTP2Request]) async -> [Result<HTTP2Response, any Error>] {
        await concurrentlyInOrder(requests) { request in
            do { return .success(try await send(request)) } catch { return .failure(error) }
        }
    }
}

public enum APNsTransportKind: String, Sendable {
    case nio
    case asyncHTTPClient = "async-http-client"
}
