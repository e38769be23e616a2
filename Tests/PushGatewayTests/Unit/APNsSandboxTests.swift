import APNsSandbox
import Crypto
import Foundation
import NIOHPACK
import NostrProtocol
import PushGateway
import Testing

/// The sandbox's rules as values: Apple's request checks, provider-token checks and scripted
/// failures. (Its HTTP/2 server is exercised by HTTP2DeliveryTests and the process tests.)
@Suite struct APNsSandboxTests {
    static let token = String(repeating: "ab", count: 32)

    static func request(
        method: String = "POST", path: String = "/3/device/\(token)", headers: [(String, String)] = [], body: String = #"{"aps":{}}"#,
        dropping: Set<String> = []
    ) -> SandboxRequest {
        var all: [(String, String)] = [
            ("apns-topic", "app.test"), ("apns-push-type", "alert"), ("apns-priority", "10"),
            ("apns-id", UUID().uuidString), ("apns-expiration", "0"), ("apns-collapse-id", "c"),
        ]
        all.removeAll { dropping.contains($0.0) }
        return SandboxRequest(
            method: method, path: path, headers: (all + headers).map { (name: $0.0, value: $0.1) }, body: Array(body.utf8))
    }

    @Test func appleRequestChecks() {
        let validator = APNsRequestValidator(allowedTopics: ["app.test"])
        #expect(validator.check(Self.request()) == nil)
        let cases: [(SandboxRequest, SandboxReply)] = [
            (Self.request(method: "GET"), SandboxReply(status: 405, reason: "MethodNotAllowed")),
            (Self.request(path: "/3/devices/\(Self.token)"), SandboxReply(status: 404, reason: "BadPath")),
            (Self.request(path: "/3/device/"), SandboxReply(status: 400, reason: "MissingDeviceToken")),
            (Self.request(path: "/3/device/xyz"), SandboxReply(status: 400, reason: "BadDeviceToken")),
            (Self.request(path: "/3/device/" + String(repeating: "a", count: 63)), SandboxReply(status: 400, reason: "BadDeviceToken")),
            (Self.request(headers: [("apns-topic", "app.test")]), SandboxReply(status: 400, reason: "DuplicateHeaders")),
            (Self.request(dropping: ["apns-topic"]), SandboxReply(status: 400, reason: "MissingTopic")),
            (
                Self.request(headers: [("apns-topic", "other.app")], dropping: ["apns-topic"]),
                SandboxReply(status: 400, reason: "TopicDisallowed")
            ),
            (
                Self.request(headers: [("apns-push-type", "shout")], dropping: ["apns-push-type"]),
                SandboxReply(status: 400, reason: "InvalidPushType")
            ),
            (
                Self.request(headers: [("apns-priority", "7")], dropping: ["apns-priority"]),
                SandboxReply(status: 400, reason: "BadPriority")
            ),
            (
                Self.request(headers: [("apns-push-type", "background")], dropping: ["apns-push-type"]),
                SandboxReply(status: 400, reason: "BadPriority")
            ),
            (Self.request(headers: [("apns-id", "not-a-uuid")], dropping: ["apns-id"]), SandboxReply(status: 400, reason: "BadMessageId")),
            (
                Self.request(headers: [("apns-expiration", "soon")], dropping: ["apns-expiration"]),
                SandboxReply(status: 400, reason: "BadExpirationDate")
            ),
            (
                Self.request(headers: [("apns-collapse-id", String(repeating: "x", count: 65))], dropping: ["apns-collapse-id"]),
                SandboxReply(status: 400, reason: "BadCollapseId")
            ),
            (Self.request(body: ""), SandboxReply(status: 400, reason: "PayloadEmpty")),
            (Self.request(body: String(repeating: "x", count: 4097)), SandboxReply(status: 413, reason: "PayloadTooLarge")),
        ]
        for (request, expected) in cases {
            #expect(validator.check(request) == expected, "\(request.method) \(request.path) \(request.headers.map(\.value))")
        }
        #expect(validator.check(Self.request(body: String(repeating: "x", count: 4096))) == nil, "exactly 4096 bytes is allowed")
    }

    /// Each of Apple's single-value headers given twice is refused, whatever the case of its
    /// name; another header may repeat.
    @Test func everySingleValueHeaderTwiceIsADuplicate() {
        let validator = APNsRequestValidator()
        let uuid = UUID().uuidString
        for (name, value) in [
            ("authorization", "bearer x"), ("apns-topic", "app.test"), ("apns-push-type", "alert"), ("apns-priority", "10"),
            ("apns-id", uuid), ("apns-expiration", "0"), ("apns-collapse-id", "c"), ("APNS-Topic", "app.test"),
        ] {
            let once = Self.request(headers: [(name, value)], dropping: [name.lowercased()])
            let twice = Self.request(headers: [(name, value), (name, value)], dropping: [name.lowercased()])
            #expect(validator.check(once) == nil, "\(name) once")
            #expect(validator.check(twice) == SandboxReply(status: 400, reason: "DuplicateHeaders"), "\(name) twice")
        }
        #expect(validator.check(Self.request(headers: [("x-trace", "1"), ("x-trace", "2")])) == nil)
    }

    /// RFC 9113's rules for a request's header block, as the sandbox checks them in place of
    /// NIOHTTP2's (`HeaderBlockCheck`).
    @Test func headerBlockRules() {
        let pseudo = [(":method", "POST"), (":scheme", "https"), (":authority", "localhost"), (":path", "/3/device/\(Self.token)")]
        func problem(_ fields: [(String, String)], pseudo: [(String, String)] = pseudo) -> String? {
            HeaderBlockCheck.problem(in: HPACKHeaders((pseudo + fields).map { ($0.0, $0.1) }))
        }
        #expect(problem([("apns-topic", "app.test"), ("te", "trailers"), ("x-value", "a b")]) == nil)
        #expect(problem([]) == nil)
        let refused: [(String, String?)] = [
            ("upper case", problem([("Apns-Topic", "app.test")])),
            ("a space in a name", problem([("apns topic", "app.test")])),
            ("an empty name", problem([("", "x")])),
            ("connection", problem([("connection", "close")])),
            ("keep-alive", problem([("keep-alive", "5")])),
            ("transfer-encoding", problem([("transfer-encoding", "chunked")])),
            ("upgrade", problem([("upgrade", "h2c")])),
            ("proxy-connection", problem([("proxy-connection", "x")])),
            ("te gzip", problem([("te", "gzip")])),
            ("NUL", problem([("x", "a\u{0}b")])),
            ("LF", problem([("x", "a\nb")])),
            ("CR", problem([("x", "a\rb")])),
            ("leading space", problem([("x", " a")])),
            ("trailing tab", problem([("x", "a\t")])),
            ("two :method", problem([], pseudo: pseudo + [(":method", "GET")])),
            ("two :scheme", problem([], pseudo: pseudo + [(":scheme", "http")])),
            ("two :path", problem([], pseudo: pseudo + [(":path", "/")])),
            ("empty :path", problem([], pseudo: [(":method", "POST"), (":scheme", "https"), (":path", "")])),
            ("no :method", problem([], pseudo: [(":scheme", "https"), (":path", "/")])),
            ("no :scheme", problem([], pseudo: [(":method", "POST"), (":path", "/")])),
            ("a response's pseudo-header", problem([], pseudo: pseudo + [(":status", "200")])),
            ("a pseudo-header after a field", problem([("x", "1"), (":path", "/")], pseudo: [(":method", "POST"), (":scheme", "https")])),
        ]
        for (what, answer) in refused { #expect(answer != nil, "\(what)") }
        #expect(problem([("x", "a\u{7F}b")]) == nil, "DEL is allowed in a value")
        #expect(problem([("x\u{7F}", "a")]) != nil, "DEL is not a token character")
        #expect(problem([("connectiom", "close"), ("tf", "gzip")]) == nil, "names of those lengths that are none of them")
    }

    /// The value check reads eight bytes at a time: each refused byte is found wherever it falls
    /// in a long value (every offset of a word and of the tail), and bytes near them are not
    /// mistaken for them.
    @Test func aValuesNULCRAndLFAreFoundAtEveryOffset() {
        let base = Array(repeating: UInt8(ascii: "a"), count: 37)
        for refused: UInt8 in [0x00, 0x0A, 0x0D] {
            for offset in 1..<(base.count - 1) {
                var bytes = base
                bytes[offset] = refused
                let value = String(decoding: bytes, as: UTF8.self)
                #expect(HeaderBlockCheck.problem(inValue: value) == "a NUL, CR or LF", "byte \(refused) at \(offset)")
            }
        }
        for allowed: UInt8 in [0x01, 0x09, 0x0B, 0x0C, 0x0E, 0x1F, 0x7F, 0xFF] {
            for offset in 1..<(base.count - 1) {
                var bytes = base
                bytes[offset] = allowed
                bytes[offset - 1] = 0x80
                let value = String(decoding: bytes, as: UTF8.self)
                #expect(HeaderBlockCheck.problem(inValue: value) == nil, "byte \(allowed) at \(offset)")
            }
        }
        #expect(HeaderBlockCheck.problem(inValue: String(decoding: base, as: UTF8.self)) == nil)
        #expect(HeaderBlockCheck.problem(inValue: "") == nil)
    }

    @Test func scriptedFailuresByTokenPrefix() {
        #expect(ScriptedFailure(token: "0400ab") == .badDeviceToken)
        #expect(ScriptedFailure(token: "0403ab") == .expiredProviderTokenOnce)
        #expect(ScriptedFailure(token: "0410ab") == .unregistered(secondsAgo: 0))
        #expect(ScriptedFailure(token: "0411ab") == .unregistered(secondsAgo: 3600))
        #expect(ScriptedFailure(token: "04293a") == .tooManyRequests(times: 3))
        #expect(ScriptedFailure(token: "0500fa") == .serverError(times: 15))
        #expect(ScriptedFailure(token: "abab") == nil)
        #expect(
            ScriptedFailure.unregistered(secondsAgo: 3600).reply(nowMilliseconds: 10_000_000)
                == SandboxReply(status: 410, reason: "Unregistered", timestampMilliseconds: 6_400_000))
    }

    @Test func serverErrorsStopAfterTheirCount() throws {
        let state = try SandboxState(configuration: SandboxConfiguration())
        let connection = SandboxConnectionState()
        let token = "05002" + String(repeating: "a", count: 59)
        let statuses = (0..<4).map { _ in state.answer(Self.request(path: "/3/device/\(token)"), on: connection).status }
        #expect(statuses == [500, 500, 200, 200])
        #expect(state.records().map(\.status) == [500, 500, 200, 200])
        #expect(state.records(after: 2, status: 200).map(\.sequence) == [3, 4])
    }

    @Test func providerTokensAreCheckedLikeApple() throws {
        let key = P256.Signing.PrivateKey()
        let app = APNsApp(topic: "app.test", keyID: "KEY1", teamID: "TEAM1", privateKeyPEM: key.pemRepresentation)
        let verifier = ProviderTokenVerifier(keys: [ProviderKey(keyID: "KEY1", teamID: "TEAM1", publicKey: key.publicKey)])
        let now = Date()
        let nowSeconds = Int64(now.timeIntervalSince1970)
        let good = try APNsTokenSigner(app: app).token(issuedAt: now)
        #expect(verifier.verify(authorization: "bearer " + good, now: nowSeconds) == .valid(issuedAt: nowSeconds))
        #expect(
            verifier.verify(authorization: "bearer " + good, now: nowSeconds + 3601) == .rejected("ExpiredProviderToken"),
            "cached tokens still age")
        #expect(verifier.verify(authorization: nil, now: nowSeconds) == .rejected("MissingProviderToken"))
        #expect(verifier.verify(authorization: good, now: nowSeconds) == .rejected("InvalidProviderToken"), "needs the bearer scheme")

        let future = try APNsTokenSigner(app: app).token(issuedAt: now.addingTimeInterval(600))
        #expect(verifier.verify(authorization: "bearer " + future, now: nowSeconds) == .rejected("InvalidProviderToken"))
        var otherTeam = app
        otherTeam.teamID = "TEAM2"
        #expect(
            verifier.verify(authorization: "bearer " + (try APNsTokenSigner(app: otherTeam).token(issuedAt: now)), now: nowSeconds)
                == .rejected("InvalidProviderToken"))
        var otherKeyID = app
        otherKeyID.keyID = "KEY2"
        #expect(
            verifier.verify(authorization: "bearer " + (try APNsTokenSigner(app: otherKeyID).token(issuedAt: now)), now: nowSeconds)
                == .rejected("InvalidProviderToken"))
        var impostor = app
        impostor.privateKeyPEM = P256.Signing.PrivateKey().pemRepresentation
        #expect(
            verifier.verify(authorization: "bearer " + (try APNsTokenSigner(app: impostor).token(issuedAt: now)), now: nowSeconds)
                == .rejected("InvalidProviderToken"), "signed by another key")
        var parts = good.split(separator: ".").map(String.init)
        parts[2] = String(parts[2].reversed())
        #expect(
            verifier.verify(authorization: "bearer " + parts.joined(separator: "."), now: nowSeconds) == .rejected("InvalidProviderToken"))
    }

    @Test func aConnectionMayChangeTokensOnlyEveryTwentyMinutes() {
        let connection = SandboxConnectionState()
        #expect(connection.accept(providerToken: "a", issuedAt: 1000))
        #expect(connection.accept(providerToken: "a", issuedAt: 1000))
        #expect(!connection.accept(providerToken: "b", issuedAt: 1000 + 19 * 60), "TooManyProviderTokenUpdates")
        #expect(connection.accept(providerToken: "c", issuedAt: 1000 + 20 * 60))
    }

    @Test func generatedCertificateNamesLoopback() throws {
        let certificate = try SandboxCertificate.generate()
        #expect(certificate.chainPEM.hasPrefix("-----BEGIN CERTIFICATE-----"))
        #expect(certificate.caPEM?.hasPrefix("-----BEGIN CERTIFICATE-----") == true)
        #expect(certificate.chainPEM != certificate.caPEM)
        #expect((try? P256.Signing.PrivateKey(pemRepresentation: certificate.privateKeyPEM)) != nil)
    }
}
