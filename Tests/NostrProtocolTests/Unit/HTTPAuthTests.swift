import Crypto
import NostrProtocol
import Testing

@Suite struct HTTPAuthTests {
    let keys = Keys.generate()
    let now: Int64 = 1_700_000_000
    let body = Array(#"{"device_token":"ab"}"#.utf8)
    let verifier = HTTPAuthVerifier(maxSkewSeconds: 300, publicBaseURL: "https://push.example.com/")

    func linkstrHeader(
        method: String = "POST", path: String = "/v1/devices/register", body: [UInt8]? = nil,
        nonce: String? = "n-1", createdAt: Int64? = nil
    ) -> String {
        HTTPAuth.headerValue(
            for: HTTPAuth.linkstrEvent(
                keys: keys, method: method, path: path, body: body ?? self.body,
                nonce: nonce, createdAt: createdAt ?? now))
    }

    var request: HTTPAuthRequest { HTTPAuthRequest(method: "POST", path: "/v1/devices/register", body: body) }

    @Test func linkstrDialectVerifies() throws {
        let verified = try verifier.verify(authorization: linkstrHeader(), request: request, now: now)
        #expect(verified.pubkey == keys.publicKey)
        #expect(verified.dialect == .linkstr)
        #expect(verified.replayKey == "n-1")
    }

    /// The event's JSON is read as bytes: a byte that is not UTF-8, where a string of the event
    /// carries it, is refused as the JSON it breaks, not repaired into something that verifies.
    @Test func refusesAnEventThatIsNotUTF8() throws {
        var json = Array(
            HTTPAuth.linkstrEvent(keys: keys, method: "POST", path: "/v1/devices/register", body: body, nonce: "n-\u{e9}", createdAt: now)
                .json.utf8)
        let accent = try #require(json.firstRange(of: [0xC3, 0xA9]))
        json.replaceSubrange(accent, with: [0xE9, 0x20])
        #expect {
            try verifier.verify(authorization: "Nostr " + Base64.encode(json), request: request, now: now)
        } throws: { error in
            if case .malformedEvent(.json) = error as? HTTPAuthError { true } else { false }
        }
    }

    @Test func linkstrRandomNonceDiffersEachTime() throws {
        let a = try verifier.verify(authorization: linkstrHeader(nonce: nil), request: request, now: now)
        let b = try verifier.verify(authorization: linkstrHeader(nonce: nil), request: request, now: now)
        #expect(a.replayKey != b.replayKey)
    }

    @Test func standardDialectVerifies() throws {
        let event = HTTPAuth.standardEvent(
            keys: keys, url: "https://push.example.com/v1/devices/register", method: "POST", body: body, createdAt: now)
        let verified = try verifier.verify(authorization: HTTPAuth.headerValue(for: event), request: request, now: now)
        #expect(verified.dialect == .standard)
        #expect(verified.replayKey == event.id.hex)
    }

    @Test func standardURLIncludesQuery() throws {
        let event = HTTPAuth.standardEvent(keys: keys, url: "https://push.example.com/v1/devices?all=1", method: "GET", createdAt: now)
        let get = HTTPAuthRequest(method: "GET", path: "/v1/devices", query: "all=1")
        #expect(try verifier.verify(authorization: HTTPAuth.headerValue(for: event), request: get, now: now).pubkey == keys.publicKey)
        let other = HTTPAuthRequest(method: "GET", path: "/v1/devices", query: "all=2")
        #expect(throws: HTTPAuthError.urlMismatch) {
            try verifier.verify(authorization: HTTPAuth.headerValue(for: event), request: other, now: now)
        }
    }

    @Test func standardWithoutBaseURLIsRefused() throws {
        // Without its own public URL a verifier could only compare paths, and would accept a header
        // signed for any other server with the same routes.
        let open = HTTPAuthVerifier()
        let event = HTTPAuth.standardEvent(
            keys: keys, url: "https://anything.example/v1/devices/register", method: "POST", body: body, createdAt: now)
        #expect(throws: HTTPAuthError.standardNeedsPublicURL) {
            try open.verify(authorization: HTTPAuth.headerValue(for: event), request: request, now: now)
        }
        #expect(HTTPAuthError.standardNeedsPublicURL.description == "standard NIP-98 auth needs PUBLIC_URL on the server")
        // The linkstr dialect needs no base URL.
        #expect(try open.verify(authorization: linkstrHeader(), request: request, now: now).dialect == .linkstr)
    }

    @Test func standardURLIsComparedExactly() throws {
        for signed in [
            "http://push.example.com/v1/devices/register", "https://push.example.com:8443/v1/devices/register",
            "https://push.example.com.evil/v1/devices/register", "https://push.example.com/v1/devices/register/",
            "https://push.example.com//v1/devices/register", "https://push.example.com/v1/devices/register?x=1",
        ] {
            let event = HTTPAuth.standardEvent(keys: keys, url: signed, method: "POST", body: body, createdAt: now)
            #expect(throws: HTTPAuthError.urlMismatch, "\(signed)") {
                try verifier.verify(authorization: HTTPAuth.headerValue(for: event), request: request, now: now)
            }
        }
    }

    @Test func acceptsUnpaddedBase64() throws {
        var header = linkstrHeader()
        while header.hasSuffix("=") { header.removeLast() }
        #expect(try verifier.verify(authorization: header, request: request, now: now).pubkey == keys.publicKey)
    }

    @Test func everyRejectionHasItsReason() throws {
        let standardNoPayload = HTTPAuth.standardEvent(
            keys: keys, url: "https://push.example.com/v1/devices/register", method: "POST", createdAt: now)
        let standardWrongURL = HTTPAuth.standardEvent(
            keys: keys, url: "https://evil.example.com/v1/devices/register", method: "POST", body: body, createdAt: now)
        let wrongKind = keys.sign(kind: 1, tags: [["method", "POST"], ["path", "/v1/devices/register"]], content: "", createdAt: now)
        let noMethod = keys.sign(kind: 27235, tags: [["path", "/v1/devices/register"]], content: "", createdAt: now)
        let noDialect = keys.sign(kind: 27235, tags: [["method", "POST"]], content: "", createdAt: now)
        let withContent = keys.sign(
            kind: 27235, tags: [["method", "POST"], ["path", "/v1/devices/register"]], content: "hi", createdAt: now)
        let noNonce = keys.sign(
            kind: 27235,
            tags: [["method", "POST"], ["path", "/v1/devices/register"], ["payload_sha256", Hex.encode(SHA256.hash(data: body))]],
            content: "", createdAt: now)
        let noPayload = keys.sign(
            kind: 27235, tags: [["method", "POST"], ["path", "/v1/devices/register"], ["nonce", "x"]], content: "", createdAt: now)
        let good = HTTPAuth.linkstrEvent(keys: keys, method: "POST", path: "/v1/devices/register", body: body, nonce: "n", createdAt: now)
        let badID = NostrEvent(
            id: try EventID(bytes: [UInt8](repeating: 0, count: 32)), pubkey: good.pubkey, createdAt: good.createdAt,
            kind: good.kind, tags: good.tags, content: good.content, sig: good.sig)
        let other = Keys.generate()
        let badSig = NostrEvent(
            id: good.id, pubkey: good.pubkey, createdAt: good.createdAt, kind: good.kind, tags: good.tags,
            content: good.content, sig: other.sign(good.id.bytes))

        let cases: [(String?, HTTPAuthError)] = [
            (nil, .missingHeader),
            ("", .missingHeader),
            ("Bearer abc", .wrongScheme),
            ("nostr " + linkstrHeader().dropFirst(6), .wrongScheme),
            ("Nostr !!!!", .invalidBase64),
            ("Nostr " + Base64.encode(Array("[1,2]".utf8)), .malformedEvent(.notAnObject)),
            (HTTPAuth.headerValue(for: wrongKind), .wrongKind(1)),
            (HTTPAuth.headerValue(for: withContent), .nonEmptyContent),
            (linkstrHeader(createdAt: now - 301), .expired),
            (linkstrHeader(createdAt: now + 301), .fromTheFuture),
            (HTTPAuth.headerValue(for: noMethod), .missingTag("method")),
            (linkstrHeader(method: "PUT"), .methodMismatch),
            (linkstrHeader(path: "/v1/push"), .pathMismatch),
            (linkstrHeader(body: Array("other".utf8)), .payloadMismatch),
            (linkstrHeader(nonce: "   "), .blankNonce),
            (linkstrHeader(nonce: String(repeating: "n", count: HTTPAuth.maxNonceBytes + 1)), .nonceTooLong(HTTPAuth.maxNonceBytes)),
            (linkstrHeader(nonce: "a\u{0}b"), .nonceHasControlCharacters),
            (linkstrHeader(nonce: "a\u{7f}"), .nonceHasControlCharacters),
            (HTTPAuth.headerValue(for: noNonce), .missingTag("nonce")),
            (HTTPAuth.headerValue(for: noPayload), .missingTag("payload_sha256")),
            (HTTPAuth.headerValue(for: noDialect), .unknownDialect),
            (HTTPAuth.headerValue(for: standardNoPayload), .missingPayload),
            (HTTPAuth.headerValue(for: standardWrongURL), .urlMismatch),
            (HTTPAuth.headerValue(for: badID), .invalidID),
            (HTTPAuth.headerValue(for: badSig), .invalidSignature),
        ]
        for (header, expected) in cases {
            #expect(throws: expected, "\(expected)") { try verifier.verify(authorization: header, request: request, now: now) }
        }
        let linkstrOnly = HTTPAuthVerifier(acceptedDialects: [.linkstr])
        let standard = HTTPAuth.standardEvent(keys: keys, url: "https://x/v1/devices/register", method: "POST", body: body, createdAt: now)
        #expect(throws: HTTPAuthError.dialectNotAccepted) {
            try linkstrOnly.verify(authorization: HTTPAuth.headerValue(for: standard), request: request, now: now)
        }
    }

    @Test func standardPayloadTagChecked() throws {
        let event = keys.sign(
            kind: 27235,
            tags: [
                ["u", "https://push.example.com/v1/devices/register"], ["method", "POST"],
                ["payload", String(repeating: "0", count: 64)],
            ], content: "", createdAt: now)
        #expect(throws: HTTPAuthError.payloadMismatch) {
            try verifier.verify(authorization: HTTPAuth.headerValue(for: event), request: request, now: now)
        }
    }

    @Test(.enabled(if: Vectors.available)) func vectorFile() throws {
        let file = try Vectors.json("nip98-http-auth.json")
        // The published spec example: header decodes (no padding), but its id was edited after signing.
        let spec = file["spec_example"]!
        let specVerifier = HTTPAuthVerifier(maxSkewSeconds: 60, publicBaseURL: "https://api.snort.social")
        #expect(throws: HTTPAuthError.invalidID) {
            try specVerifier.verify(
                authorization: spec["authorization_header_value"]!.string,
                request: HTTPAuthRequest(method: "GET", path: "/api/v1/n5sp/list"), now: spec["event"]!["created_at"]!.int)
        }
        for vector in file["generated"]!.array {
            let url = vector["request_url"]!.string
            let afterHost = url.dropFirst("https://api.example.com".count)
            let parts = afterHost.split(separator: "?", maxSplits: 1).map(String.init)
            let body = vector["request_body_utf8"]!.stringValue.map { Array($0.utf8) } ?? []
            let request = HTTPAuthRequest(
                method: vector["request_method"]!.string, path: parts[0], query: parts.count > 1 ? parts[1] : nil, body: body)
            let rustWindow = HTTPAuthVerifier(maxSkewSeconds: 60, publicBaseURL: "https://api.example.com")
            let header = vector["authorization_header_value"]!.string
            for now in vector["server_check"]!["now_ok"]!.array {
                let verified = try rustWindow.verify(authorization: header, request: request, now: now.int)
                #expect(verified.pubkey.hex == vector["pubkey"]!.string)
                #expect(verified.dialect == .standard)
            }
            // Rebuilt here, the event is identical to rust-nostr's apart from the signature.
            let keys = Keys(secretKey: try SecretKey(hex: vector["secret_key"]!.string))
            let ours = HTTPAuth.standardEvent(
                keys: keys, url: url, method: request.method, body: body.isEmpty ? nil : body,
                createdAt: vector["event"]!["created_at"]!.int)
            #expect(ours.id.hex == vector["event"]!["id"]!.string)
        }
    }
}
