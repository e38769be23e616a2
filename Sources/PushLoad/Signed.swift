import AsyncHTTPClient
import NIOCore
import NostrProtocol

/// A request signed ahead of time (linkstr NIP-98 dialect, fresh nonce), so the clock measures the
/// gateway rather than the signer.
struct Signed: Sendable {
    let method: String
    let path: String
    let body: String
    let authorization: String

    static func request(_ keys: Keys, _ method: String, _ path: String, _ body: String) -> Signed {
        let event = HTTPAuth.linkstrEvent(keys: keys, method: method, path: path, body: Array(body.utf8), nonce: nil, createdAt: UnixTime.now())
        return Signed(method: method, path: path, body: body, authorization: HTTPAuth.headerValue(for: event))
    }

    /// The HTTP status, or 0 when the request did not complete.
    func send(base: String, http: HTTPClient) async -> Int {
        var request = HTTPClientRequest(url: base + path)
        request.method = .RAW(value: method)
        request.headers.add(name: "authorization", value: authorization)
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: body))
        do {
            let response = try await http.execute(request, timeout: .seconds(30))
            _ = try await response.body.collect(upTo: 1 << 20)
            return Int(response.status.code)
        } catch {
            return 0
        }
    }
}
