import Foundation
import HTTPTypes
import HummingbirdTesting
import NostrProtocol
import PushGateway
import Testing

@Suite(.serialized) struct AuthTests {
    @Test func rejectionsAre401WithReasonAndStoreNothing() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate()
            let body = GatewayHarness.registerBody(GatewayHarness.token(0x30))
            let path = "/v1/devices/register"

            let missing = try await gateway.send(nil, .post, path, json: body)
            #expect(missing.status == .unauthorized)
            #expect(missing.errorMessage == "missing Authorization header")

            let expired = try await gateway.send(alice, .post, path, json: body, createdAt: UnixTime.now() - 301)
            #expect(expired.status == .unauthorized)
            #expect(expired.errorMessage == "authorization event is too old")

            // A minute past the 300 s skew: one second over flaked when the gateway saw the
            // request in the next second, which brought it back within the window.
            let future = try await gateway.send(alice, .post, path, json: body, createdAt: UnixTime.now() + 360)
            #expect(future.errorMessage == "authorization event is too far in the future")

            // Signed for another path, another method, another body.
            let otherPath = HTTPAuth.linkstrEvent(keys: alice, method: "POST", path: "/v1/push", body: Array(body.utf8))
            let wrongPath = try await gateway.send(
                nil, .post, path, json: body, headers: [.authorization: HTTPAuth.headerValue(for: otherPath)])
            #expect(wrongPath.errorMessage == "authorization path does not match the request")
            let otherMethod = HTTPAuth.linkstrEvent(keys: alice, method: "PUT", path: path, body: Array(body.utf8))
            let wrongMethod = try await gateway.send(
                nil, .post, path, json: body, headers: [.authorization: HTTPAuth.headerValue(for: otherMethod)])
            #expect(wrongMethod.errorMessage == "authorization method does not match the request")
            let otherBody = HTTPAuth.linkstrEvent(keys: alice, method: "POST", path: path, body: Array("{}".utf8))
            let wrongBody = try await gateway.send(
                nil, .post, path, json: body, headers: [.authorization: HTTPAuth.headerValue(for: otherBody)])
            #expect(wrongBody.errorMessage == "authorization payload hash does not match the body")

            let garbage = try await gateway.send(nil, .post, path, json: body, headers: [.authorization: "Nostr not-base64!"])
            #expect(garbage.errorMessage == "authorization event is not valid base64")
            let bearer = try await gateway.send(nil, .post, path, json: body, headers: [.authorization: "Bearer x"])
            #expect(bearer.errorMessage == "Authorization scheme must be Nostr")

            // Auth is checked before the body: a bad body with bad auth is a 401.
            let both = try await gateway.send(nil, .post, path, json: "{")
            #expect(both.status == .unauthorized)

            #expect(try await gateway.count("SELECT count(*)::int FROM devices") == 0)
            #expect(try await gateway.count("SELECT count(*)::int FROM auth_replays") == 0)
        }
    }

    /// Text PostgreSQL cannot store (a NUL character) or index (a btree key over ~2.7 KB) is
    /// refused up front with a reason, never a 500 from the database.
    @Test func nonceThatCannotBeStoredIsRefusedWithAReason() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate()
            let path = "/v1/devices/register"
            let body = GatewayHarness.registerBody(GatewayHarness.token(0x33))
            let cases: [(String, String)] = [
                ("a\u{0}b", "authorization nonce must not contain control characters"),
                ("line\nbreak", "authorization nonce must not contain control characters"),
                (
                    String(repeating: "n", count: HTTPAuth.maxNonceBytes + 1),
                    "authorization nonce is longer than \(HTTPAuth.maxNonceBytes) bytes"
                ),
            ]
            for (nonce, message) in cases {
                let response = try await gateway.send(alice, .post, path, json: body, nonce: nonce)
                #expect(response.status == .unauthorized, "\(message)")
                #expect(response.errorMessage == message)
            }
            #expect(
                try await gateway.send(alice, .post, path, json: body, nonce: String(repeating: "n", count: HTTPAuth.maxNonceBytes)).status
                    == .accepted,
                "the longest allowed nonce is stored")
            #expect(try await gateway.count("SELECT count(*)::int FROM auth_replays") == 1)
            #expect(try await gateway.count("SELECT count(*)::int FROM devices") == 1)
        }
    }

    @Test func replayedNonceIsRejected() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate()
            let event = HTTPAuth.linkstrEvent(
                keys: alice, method: "POST", path: "/v1/devices/register",
                body: Array(GatewayHarness.registerBody(GatewayHarness.token(0x31)).utf8), nonce: "once")
            let header: HTTPFields = [.authorization: HTTPAuth.headerValue(for: event)]
            let body = GatewayHarness.registerBody(GatewayHarness.token(0x31))
            #expect(try await gateway.send(nil, .post, "/v1/devices/register", json: body, headers: header).status == .accepted)
            // Delete the device, then replay the captured request: it must not come back.
            try await gateway.send(alice, .post, "/v1/devices/unregister", json: #"{"device_token":"\#(GatewayHarness.token(0x31))"}"#)
            let replay = try await gateway.send(nil, .post, "/v1/devices/register", json: body, headers: header)
            #expect(replay.status == .unauthorized)
            #expect(replay.errorMessage == "authorization was already used (replayed nonce or event)")
            #expect(try await gateway.count("SELECT count(*)::int FROM devices") == 0)
            // The same nonce from another pubkey is a different key.
            #expect(try await gateway.send(Keys.generate(), .post, "/v1/devices/register", json: body, nonce: "once").status == .accepted)
        }
    }

    @Test func standardNIP98WithPublicURL() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate()
            let body = GatewayHarness.registerBody(GatewayHarness.token(0x32))
            let event = HTTPAuth.standardEvent(
                keys: alice, url: "https://push.example.com/v1/devices/register", method: "POST", body: Array(body.utf8))
            let header: HTTPFields = [.authorization: HTTPAuth.headerValue(for: event)]
            #expect(try await gateway.send(nil, .post, "/v1/devices/register", json: body, headers: header).status == .accepted)
            let replay = try await gateway.send(nil, .post, "/v1/devices/register", json: body, headers: header)
            #expect(replay.status == .unauthorized, "a standard NIP-98 event is single use too")
            let elsewhere = HTTPAuth.standardEvent(
                keys: alice, url: "https://evil.example.com/v1/devices/register", method: "POST", body: Array(body.utf8))
            let wrongHost = try await gateway.send(
                nil, .post, "/v1/devices/register", json: body, headers: [.authorization: HTTPAuth.headerValue(for: elsewhere)])
            #expect(wrongHost.errorMessage == "authorization url does not match the request")
        }
    }

    @Test func standardNIP98WithoutPublicURLIsRefusedAndTheLinkstrDialectStillWorks() async throws {
        try await GatewayHarness.run(publicURL: nil) { gateway in
            let alice = Keys.generate()
            let body = GatewayHarness.registerBody(GatewayHarness.token(0x33))
            let event = HTTPAuth.standardEvent(
                keys: alice, url: "https://push.example.com/v1/devices/register", method: "POST", body: Array(body.utf8))
            let refused = try await gateway.send(
                nil, .post, "/v1/devices/register", json: body, headers: [.authorization: HTTPAuth.headerValue(for: event)])
            #expect(refused.status == .unauthorized && refused.errorMessage == "standard NIP-98 auth needs PUBLIC_URL on the server")
            #expect(try await gateway.count("SELECT count(*)::int FROM devices") == 0)
            #expect(try await gateway.send(alice, .post, "/v1/devices/register", json: body).status == .accepted)
        }
    }
}
