import APNsSandbox
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOSSL
import NostrProtocol
import PushGateway
import Synchronization
import Testing

/// The sandbox's HTTP/2 server over the wire (TLS, ALPN h2) with a general-purpose client: what
/// its frame-level handler must get right beyond the gateway's own requests: flow control for a
/// body larger than the initial window, management routes with query strings, and errors that
/// leave the connection usable.
@Suite struct APNsSandboxServerTests {
    static let token = String(repeating: "cd", count: 32)

    /// Runs `body` with an HTTP client that trusts the sandbox's CA, shut down afterwards.
    static func withClient(_ sandbox: SandboxFixture, _ body: (HTTPClient) async throws -> Void) async throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(sandbox.caFile)]
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(tlsConfiguration: tls))
        do {
            try await body(http)
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    /// One provider token for the whole test: like Apple, the sandbox refuses a connection that
    /// changes its token more often than every 20 minutes.
    static let issuedAt = Date()

    static func push(_ sandbox: SandboxFixture, body: ByteBuffer, apnsID: String, path: String? = nil) throws -> HTTPClientRequest {
        var request = HTTPClientRequest(url: sandbox.url + (path ?? "/3/device/\(token)"))
        request.method = .POST
        // ES256 signatures are randomised: the same token means the same string, so sign once.
        let providerToken = try Self.providerToken(sandbox)
        request.headers.add(name: "authorization", value: "bearer \(providerToken)")
        request.headers.add(name: "apns-topic", value: SandboxFixture.topic)
        request.headers.add(name: "apns-push-type", value: "alert")
        request.headers.add(name: "apns-id", value: apnsID)
        request.body = .bytes(body)
        return request
    }

    static func providerToken(_ sandbox: SandboxFixture) throws -> String {
        try Self.tokens.withLock { tokens in
            if let token = tokens[sandbox.keyPEM] { return token }
            let token = try APNsTokenSigner(app: sandbox.apns.apps[0]).token(issuedAt: issuedAt)
            tokens[sandbox.keyPEM] = token
            return token
        }
    }

    static let tokens = Mutex<[String: String]>([:])

    static func json(_ response: HTTPClientResponse) async throws -> JSONValue {
        try JSONValue(parsing: Array(try await response.body.collect(upTo: 1 << 20).readableBytesView))
    }

    @Test func aBodyLargerThanTheStreamWindowIsReadAndRefusedThenTheConnectionGoesOn() async throws {
        try await SandboxFixture.with { sandbox in
            try await Self.withClient(sandbox) { http in
                // 200 KB: three times HTTP/2's initial stream and connection windows (65,535 bytes),
                // so it only arrives whole if the sandbox hands the credit back as it reads.
                let big = ByteBuffer(repeating: UInt8(ascii: "x"), count: 200_000)
                let refused = try await http.execute(
                    try Self.push(sandbox, body: big, apnsID: "00000000-0000-0000-0000-00000000000A"), timeout: .seconds(10))
                #expect(refused.status.code == 413)
                #expect(refused.headers.first(name: "apns-id") == "00000000-0000-0000-0000-00000000000A")
                #expect(try await Self.json(refused)["reason"]?.stringValue == "PayloadTooLarge")

                let apnsID = UUID().uuidString
                let accepted = try await http.execute(
                    try Self.push(sandbox, body: ByteBuffer(string: #"{"aps":{"alert":"hi"}}"#), apnsID: apnsID),
                    timeout: .seconds(10))
                #expect(accepted.status.code == 200)
                #expect(accepted.headers.first(name: "apns-id") == apnsID)
                let uniqueID = accepted.headers.first(name: "apns-unique-id")
                #expect(uniqueID.map(APNsRequestValidator.isUUID) == true)
                #expect(uniqueID?.count == 36 && uniqueID == uniqueID?.lowercased())
                #expect(uniqueID.map { Array($0.utf8)[14] } == UInt8(ascii: "4"), "a version-4 UUID")
                #expect(uniqueID.map { "89ab".utf8.contains(Array($0.utf8)[19]) } == true, "the RFC 9562 variant")
                let next = try await http.execute(
                    try Self.push(sandbox, body: ByteBuffer(string: #"{"aps":{"alert":"hi"}}"#), apnsID: UUID().uuidString),
                    timeout: .seconds(10))
                #expect(next.headers.first(name: "apns-unique-id").map(APNsRequestValidator.isUUID) == true)
                #expect(next.headers.first(name: "apns-unique-id") != uniqueID, "each answer its own")
                #expect(sandbox.state.records().map(\.status) == [413, 200, 200])
                #expect(sandbox.delivered().map(\.apnsID).first == apnsID)
            }
        }
    }

    /// The sandbox checks each request's header block itself (RFC 9113 §8.2, §8.3; NIOHTTP2 does
    /// not check it there): a malformed one has its stream reset, nothing is recorded, and the
    /// connection goes on answering. The requests go out on the gateway's own HTTP/2 client,
    /// which sends header blocks as it is given them.
    @Test func aMalformedHeaderBlockIsResetAndTheConnectionGoesOn() async throws {
        try await SandboxFixture.with { sandbox in
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(sandbox.caFile)]
            let pool = try HTTP2ConnectionPool(tls: tls, connectionsPerHost: 1)
            let endpoint = try #require(HTTPSEndpoint(url: sandbox.url))
            let regular = [
                ("authorization", "bearer \(try Self.providerToken(sandbox))"), ("apns-topic", SandboxFixture.topic),
                ("apns-push-type", "alert"),
            ]
            func block(pseudo: [(String, String)]? = nil, _ fields: [(String, String)]) -> HPACKHeaders {
                let pseudo =
                    pseudo ?? [
                        (":method", "POST"), (":scheme", "https"), (":path", "/3/device/\(Self.token)"), (":authority", "localhost"),
                    ]
                return HPACKHeaders((pseudo + fields).map { ($0.0, $0.1) })
            }
            func send(_ headers: HPACKHeaders) async throws -> HTTP2Response {
                try await pool.send(endpoint, slot: 0, headers: headers, body: ByteBuffer(string: #"{"aps":{}}"#))
            }
            let malformed: [(String, HPACKHeaders)] = [
                ("an upper-case name", block(regular + [("Apns-Priority", "10")])),
                ("a connection-specific field", block(regular + [("connection", "keep-alive")])),
                ("te other than trailers", block(regular + [("te", "gzip")])),
                ("CR LF in a value", block(regular + [("apns-collapse-id", "a\r\nb")])),
                ("white space at a value's end", block(regular + [("apns-collapse-id", "a ")])),
                ("two :path", block(pseudo: [(":method", "POST"), (":scheme", "https"), (":path", "/healthz"), (":path", "/x")], regular)),
                ("a pseudo-header after a field", block(pseudo: [(":method", "POST"), (":scheme", "https")], regular + [(":path", "/x")])),
                (
                    "an unknown pseudo-header",
                    block(pseudo: [(":method", "POST"), (":scheme", "https"), (":path", "/x"), (":protocol", "h")], [])
                ),
                ("no :path", block(pseudo: [(":method", "POST"), (":scheme", "https")], regular)),
            ]
            for (what, headers) in malformed {
                await #expect(throws: (any Error).self, "\(what)") { _ = try await send(headers) }
            }
            #expect(try await send(block(regular)).status == 200)
            #expect(sandbox.state.statistics.answered == 1, "only the well-formed push was answered and recorded")
            await pool.shutdown()
        }
    }

    /// A query part of `=` alone is an empty name, not a crash.
    @Test func anEmptyQueryNameIsNotACrash() async throws {
        try await SandboxFixture.with { sandbox in
            try await Self.withClient(sandbox) { http in
                let response = try await http.execute(HTTPClientRequest(url: sandbox.url + "/healthz?=&a=&=b"), timeout: .seconds(10))
                #expect(response.status.code == 200)
            }
        }
    }

    @Test func managementRoutesReadTheirQueryStrings() async throws {
        try await SandboxFixture.with { sandbox in
            try await Self.withClient(sandbox) { http in
                for index in 0..<3 {
                    let response = try await http.execute(
                        try Self.push(sandbox, body: ByteBuffer(string: #"{"aps":{}}"#), apnsID: UUID().uuidString), timeout: .seconds(10))
                    #expect(response.status.code == 200, "push \(index)")
                }
                let later = try await http.execute(
                    HTTPClientRequest(url: sandbox.url + "/deliveries?after=1&status=200"), timeout: .seconds(10))
                guard case .array(let records) = try await Self.json(later) else {
                    Issue.record("not an array")
                    return
                }
                #expect(records.compactMap { $0["seq"]?.integerValue } == [2, 3] as [Int64])

                let stats = try await Self.json(
                    try await http.execute(HTTPClientRequest(url: sandbox.url + "/stats"), timeout: .seconds(10)))
                #expect(stats["answered"]?.integerValue == 3)
                #expect(stats["by_status"]?["200"]?.integerValue == 3)

                var bad = HTTPClientRequest(url: sandbox.url + "/control/max-streams?value=0")
                bad.method = .POST
                let rejected = try await http.execute(bad, timeout: .seconds(10))
                #expect(rejected.status.code == 400)
                #expect(try await Self.json(rejected)["error"]?.stringValue == "value must be an integer in 1...100000")
                #expect(sandbox.state.maxConcurrentStreams == 100, "a refused change changes nothing")

                let unknown = try await http.execute(
                    try Self.push(sandbox, body: ByteBuffer(string: "{}"), apnsID: UUID().uuidString, path: "/3/devices/\(Self.token)"),
                    timeout: .seconds(10))
                #expect(unknown.status.code == 404)
                #expect(try await Self.json(unknown)["reason"]?.stringValue == "BadPath")
                #expect(sandbox.state.statistics.answered == 3, "only device paths are recorded")
            }
        }
    }
}
