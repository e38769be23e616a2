import NostrProtocol

/// A request signed ahead of time (linkstr NIP-98 dialect, fresh nonce).
struct SignedRequest: Sendable {
    var method: String
    var path: String
    var body: String
    var authorization: String

    static func make(keys: Keys, method: String, path: String, json: String) -> SignedRequest {
        let event = HTTPAuth.linkstrEvent(keys: keys, method: method, path: path, body: Array(json.utf8), nonce: nil, createdAt: UnixTime.now())
        return SignedRequest(method: method, path: path, body: json, authorization: HTTPAuth.headerValue(for: event))
    }
}
