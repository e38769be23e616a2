public import AsyncHTTPClient
import NIOCore
import NIOHTTP1
public import NostrProtocol

/// A request signed ahead of time (linkstr NIP-98 dialect, fresh nonce), so a load run's clock
/// measures the gateway rather than the signer.
public struct SignedRequest: Sendable {
    public var method: String
    public var path: String
    public var body: String
    public var authorization: String

    public static func make(keys: Keys, method: String, path: String, json: String) -> SignedRequest {
        let event = HTTPAuth.linkstrEvent(
            keys: keys, method: method, path: path, body: Array(json.utf8), nonce: nil, createdAt: UnixTime.now())
        return SignedRequest(method: method, path: path, body: json, authorization: HTTPAuth.headerValue(for: event))
    }

    /// Sends it to `base`; the HTTP status, or 0 when the request did not complete.
    public func send(base: String, http: HTTPClient) async -> Int {
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
