/// NIP-98 HTTP authorization events in both dialects a linkstr client may speak:
/// - standard NIP-98: tags `u` (absolute URL), `method`, and `payload` (body SHA-256) when there is a body;
/// - linkstr: tags `method`, `path`, `payload_sha256`, `nonce` (single use per pubkey).
public enum HTTPAuth {
    public static let kind: UInt16 = 27235
    public static let scheme = "Nostr"
    /// The longest linkstr-dialect nonce accepted. A nonce is stored as the replay key, and
    /// PostgreSQL cannot index a key much over 2.7 KB; clients send a UUID or 32 hex characters.
    public static let maxNonceBytes = 256

    public enum Dialect: String, Sendable, Hashable {
        case standard
        case linkstr
    }

    /// A standard NIP-98 event, tags in rust-nostr's order (u, method, payload).
    public static func standardEvent(
        keys: Keys, url: String, method: String, body: [UInt8]? = nil, createdAt: Int64 = UnixTime.now()
    ) -> NostrEvent {
        var tags = [["u", url], ["method", method.uppercased()]]
        if let body, !body.isEmpty { tags.append(["payload", SHA256Bytes.hex(body)]) }
        return keys.sign(kind: kind, tags: tags, content: "", createdAt: createdAt)
    }

    /// A linkstr-dialect event with a fresh random nonce unless one is given.
    public static func linkstrEvent(
        keys: Keys, method: String, path: String, body: [UInt8], nonce: String? = nil, createdAt: Int64 = UnixTime.now()
    ) -> NostrEvent {
        let tags = [
            ["method", method.uppercased()],
            ["path", path],
            ["payload_sha256", SHA256Bytes.hex(body)],
            ["nonce", nonce ?? Hex.encode(SecureRandom.bytes(16))],
        ]
        return keys.sign(kind: kind, tags: tags, content: "", createdAt: createdAt)
    }

    /// `Nostr <standard padded base64 of the event JSON>`.
    public static func headerValue(for event: NostrEvent) -> String {
        "\(scheme) \(Base64.encode(event.jsonBytes))"
    }
}

/// The request facts a verifier compares the authorization event with.
public struct HTTPAuthRequest: Sendable {
    public var method: String
    /// The path without the query, as routed (`/v1/push`).
    public var path: String
    /// The query string without `?`, if any (standard NIP-98 signs the full URL).
    public var query: String?
    public var body: [UInt8]

    public init(method: String, path: String, query: String? = nil, body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.body = body
    }
}

/// A header that passed every check.
public struct VerifiedHTTPAuth: Sendable, Hashable {
    public let pubkey: PublicKey
    public let event: NostrEvent
    public let dialect: HTTPAuth.Dialect
    /// What must never be accepted twice within the window: the nonce for the linkstr dialect,
    /// the event id for standard NIP-98. Storing it is the caller's job (it needs state).
    public let replayKey: String
}

/// Checks `Authorization: Nostr …` headers. Cheap checks run first and the signature last, so a
/// flood of junk headers costs no elliptic-curve work.
public struct HTTPAuthVerifier: Sendable {
    /// Allowed distance between `created_at` and now, both directions.
    public var maxSkewSeconds: Int64
    /// The external base URL (`https://push.example.com`). Standard NIP-98 `u` must equal it plus
    /// the request path (and query). When nil, the standard dialect is refused.
    public var publicBaseURL: String?
    public var acceptedDialects: Set<HTTPAuth.Dialect>

    public init(maxSkewSeconds: Int64 = 300, publicBaseURL: String? = nil, acceptedDialects: Set<HTTPAuth.Dialect> = [.standard, .linkstr])
    {
        self.maxSkewSeconds = maxSkewSeconds
        self.publicBaseURL = publicBaseURL.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.acceptedDialects = acceptedDialects
    }

    public func verify(authorization: String?, request: HTTPAuthRequest, now: Int64 = UnixTime.now()) throws(HTTPAuthError)
        -> VerifiedHTTPAuth
    {
        guard let authorization, !authorization.isEmpty else { throw .missingHeader }
        let prefix = HTTPAuth.scheme + " "
        guard authorization.hasPrefix(prefix) else { throw .wrongScheme }
        let encoded = authorization.dropFirst(prefix.count).trimmingWhitespace()
        // Accept base64 with or without padding: both are seen from real clients.
        guard let json = Base64.decode(encoded, requirePadding: false) else { throw .invalidBase64 }
        let event: NostrEvent
        do { event = try NostrEvent(jsonBytes: json) } catch { throw .malformedEvent(error) }

        guard event.kind == HTTPAuth.kind else { throw .wrongKind(event.kind) }
        guard event.content.isEmpty else { throw .nonEmptyContent }
        guard event.createdAt >= now - maxSkewSeconds else { throw .expired }
        guard event.createdAt <= now + maxSkewSeconds else { throw .fromTheFuture }

        guard let method = event.firstTagValue("method") else { throw .missingTag("method") }
        guard method.uppercased() == request.method.uppercased() else { throw .methodMismatch }

        let dialect: HTTPAuth.Dialect
        let replayKey: String
        if let url = event.firstTagValue("u") {
            dialect = .standard
            guard acceptedDialects.contains(.standard) else { throw .dialectNotAccepted }
            try checkURL(url, request)
            let payload = event.firstTagValue("payload")
            if let payload {
                guard payload.lowercased() == SHA256Bytes.hex(request.body) else { throw .payloadMismatch }
            } else if !request.body.isEmpty {
                throw .missingPayload
            }
            replayKey = event.id.hex
        } else if let path = event.firstTagValue("path") {
            dialect = .linkstr
            guard acceptedDialects.contains(.linkstr) else { throw .dialectNotAccepted }
            guard path == request.path else { throw .pathMismatch }
            guard let payload = event.firstTagValue("payload_sha256") else { throw .missingTag("payload_sha256") }
            guard payload.lowercased() == SHA256Bytes.hex(request.body) else { throw .payloadMismatch }
            guard let nonce = event.firstTagValue("nonce") else { throw .missingTag("nonce") }
            let trimmed = nonce.trimmingWhitespace()
            guard !trimmed.isEmpty else { throw .blankNonce }
            guard trimmed.utf8.count <= HTTPAuth.maxNonceBytes else { throw .nonceTooLong(HTTPAuth.maxNonceBytes) }
            guard !trimmed.containsControlCharacters else { throw .nonceHasControlCharacters }
            replayKey = trimmed
        } else {
            throw .unknownDialect
        }

        guard event.computedID == event.id else { throw .invalidID }
        guard event.pubkey.verify(event.sig, message: event.id.bytes) else { throw .invalidSignature }
        return VerifiedHTTPAuth(pubkey: event.pubkey, event: event, dialect: dialect, replayKey: replayKey)
    }

    /// `u` must name this server exactly: scheme, host, port, path and query. A verifier that does
    /// not know its own public URL cannot check that, and comparing only the path would accept a
    /// header signed for any other server with the same routes, so it refuses the dialect.
    private func checkURL(_ url: String, _ request: HTTPAuthRequest) throws(HTTPAuthError) {
        guard let base = publicBaseURL else { throw .standardNeedsPublicURL }
        let pathAndQuery = request.query.map { "\(request.path)?\($0)" } ?? request.path
        guard url == base + pathAndQuery else { throw .urlMismatch }
    }
}
