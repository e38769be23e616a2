import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import NostrProtocol
import PostgresNIO
import PushGateway
import Testing

@Suite(.serialized) struct DeviceRouteTests {
    @Test func healthAndReadiness() async throws {
        try await GatewayHarness.run { gateway in
            let health = try await gateway.send(nil, .get, "/healthz")
            #expect(health.status == .ok)
            #expect(health.json == ["status": "ok"])
            // A readiness read that misses its deadline on a busy machine answers 503 until the
            // next read (at most once a second).
            let ready = try await GatewayHarness.eventually(reading: { try await gateway.send(nil, .get, "/readyz") }) {
                $0.status == .ok
            }
            #expect(ready.done)
            #expect(ready.value.json?["status"] == "ready")
        }
    }

    @Test func registerListAndUnregister() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate()
            let token = GatewayHarness.token(0xab)
            let registered = try await gateway.send(
                alice, .post, "/v1/devices/register",
                json: GatewayHarness.registerBody(token.uppercased(), environment: " Production "))
            #expect(registered.status == .accepted)
            #expect(registered.json == ["status": "registered"])
            #expect(
                try await gateway.count(
                    "SELECT count(*)::int FROM devices WHERE device_token = '\(token)' AND pubkey = '\(alice.publicKey.hex)' AND apns_environment = 'production' AND NOT relay_watch"
                ) == 1)

            let listed = try await gateway.send(alice, .get, "/v1/devices")
            #expect(listed.status == .ok)
            let devices = try #require(listed.json?["devices"]?.arrayValue)
            #expect(devices.count == 1)
            #expect(devices.first?["device_token"] == .string(token))
            #expect(devices.first?["topic"] == .string(GatewayHarness.topic))

            // Someone else cannot unregister Alice's token.
            let mallory = Keys.generate()
            #expect(
                try await gateway.send(mallory, .post, "/v1/devices/unregister", json: #"{"device_token":"\#(token)"}"#).status == .accepted
            )
            #expect(try await gateway.count("SELECT count(*)::int FROM devices") == 1)

            let unregistered = try await gateway.send(alice, .post, "/v1/devices/unregister", json: #"{"device_token":"\#(token)"}"#)
            #expect(unregistered.status == .accepted)
            #expect(unregistered.json == ["status": "unregistered"])
            #expect(try await gateway.count("SELECT count(*)::int FROM devices") == 0)
        }
    }

    @Test func registrationCarriesTopicAndRelayWatch() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate()
            let token = GatewayHarness.token(0x01)
            let body = GatewayHarness.registerBody(token, extra: #","topic":"\#(GatewayHarness.topic)","relay_watch":true"#)
            #expect(try await gateway.send(alice, .post, "/v1/devices/register", json: body).status == .accepted)
            #expect(try await gateway.count("SELECT count(*)::int FROM devices WHERE relay_watch") == 1)
            let unknown = try await gateway.send(
                alice, .post, "/v1/devices/register",
                json: GatewayHarness.registerBody(token, extra: #","topic":"com.other.app""#))
            #expect(unknown.status == .badRequest)
            #expect(unknown.errorMessage == "unknown topic")
        }
    }

    /// A registration may name the user's inbox relays: stored normalised and without duplicates,
    /// listed back, and replaced by the next registration of the token (absent: none).
    @Test func registrationRelaysAreStoredNormalisedAndReplaced() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate()
            let token = GatewayHarness.token(0x21)
            let relays = #"["WSS://Inbox.Example:443/","wss://inbox.example","ws://relay.example:8080/dm"]"#
            let body = GatewayHarness.registerBody(token, extra: #","relay_watch":true,"relays":\#(relays)"#)
            #expect(try await gateway.send(alice, .post, "/v1/devices/register", json: body).status == .accepted)
            let stored = try await gateway.count(
                "SELECT count(*)::int FROM devices WHERE relays = ARRAY['wss://inbox.example', 'ws://relay.example:8080/dm']")
            #expect(stored == 1)
            let listed = try await gateway.send(alice, .get, "/v1/devices")
            #expect(listed.json?["devices"]?.arrayValue?.first?["relays"] == ["wss://inbox.example", "ws://relay.example:8080/dm"])

            #expect(
                try await gateway.send(alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(token)).status == .accepted)
            #expect(try await gateway.count("SELECT count(*)::int FROM devices WHERE relays = '{}'") == 1)
            let relisted = try await gateway.send(alice, .get, "/v1/devices")
            #expect(relisted.json?["devices"]?.arrayValue?.first?["relays"] == [])
        }
    }

    /// Bad relay lists are refused with the reason, and store nothing: a malformed URL, too many,
    /// and (unless `WATCH_ALLOW_PRIVATE_RELAYS`) one that points into the gateway's own network.
    @Test func badRegistrationRelaysAreRefusedAndStoreNothing() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate()
            let token = GatewayHarness.token(0x22)
            let eleven = (0..<11).map { #""wss://r\#($0).example""# }.joined(separator: ",")
            let cases: [(String, String)] = [
                (#""wss://ok.example""#, "invalid json body: relays must be an array of strings"),
                (#"[1]"#, "invalid json body: relays must be an array of strings"),
                (#"["https://relay.example"]"#, "relays[0] must start with ws:// or wss://"),
                (#"["wss://ok.example","wss://us:pw@relay.example"]"#, "relays[1] must not carry a user name or password"),
                (#"["wss://relay.example:99999"]"#, "relays[0] has an invalid port"),
                (#"["wss://127.1"]"#, "relays[0] has no valid host name or IP address"),
                ("[\(eleven)]", "relays must hold at most 10 URLs"),
                (#"["ws://127.0.0.1:5432"]"#, "relays: ws://127.0.0.1:5432 names a non-public address"),
                (#"["ws://169.254.169.254/latest"]"#, "relays: ws://169.254.169.254/latest names a non-public address"),
                (#"["ws://[::1]:7777"]"#, "relays[0] names an IPv6 address, which cannot be connected to; use a host name"),
                (#"["wss://ok.example","ws://LOCALHOST"]"#, "relays: ws://localhost names a local host"),
                (#"["ws://postgres:5432"]"#, "relays: ws://postgres:5432 names a local host"),
            ]
            for (relays, message) in cases {
                let body = GatewayHarness.registerBody(token, extra: #","relays":\#(relays)"#)
                let response = try await gateway.send(alice, .post, "/v1/devices/register", json: body)
                #expect(response.status == .badRequest, "\(relays)")
                #expect(response.errorMessage == message, "\(relays)")
            }
            #expect(try await gateway.count("SELECT count(*)::int FROM devices") == 0)
        }
        // A private deployment (and the tests' loopback relays) may allow them.
        try await GatewayHarness.run(watch: WatchSettings(allowPrivateRelays: true)) { (gateway: GatewayHarness) async throws in
            let body = GatewayHarness.registerBody(GatewayHarness.token(0x23), extra: #","relays":["ws://127.0.0.1:7777"]"#)
            #expect(try await gateway.send(Keys.generate(), .post, "/v1/devices/register", json: body).status == .accepted)
            #expect(try await gateway.count("SELECT count(*)::int FROM devices WHERE relays = ARRAY['ws://127.0.0.1:7777']") == 1)
        }
    }

    /// An APNs VoIP token is stored and listed as such; every device is listed with its platform.
    @Test func aVoIPTokenIsStoredAndListedWithItsPushType() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate()
            let alert = GatewayHarness.token(0x31), voip = GatewayHarness.token(0x32)
            #expect(
                try await gateway.send(alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(alert)).status == .accepted)
            let body = GatewayHarness.registerBody(voip, extra: #","platform":"apns","push_type":"voip""#)
            #expect(try await gateway.send(alice, .post, "/v1/devices/register", json: body).status == .accepted)
            #expect(
                try await gateway.count(
                    "SELECT count(*)::int FROM devices WHERE device_token = '\(voip)' AND platform = 'apns' AND push_type = 'voip'")
                    == 1)
            let devices = try #require(try await gateway.send(alice, .get, "/v1/devices").json?["devices"]?.arrayValue)
            let byToken = Dictionary(
                uniqueKeysWithValues: devices.compactMap { device in device["device_token"]?.stringValue.map { ($0, device) } })
            #expect(byToken[alert]?["platform"] == "apns")
            #expect(byToken[alert]?["push_type"] == "alert")
            #expect(byToken[voip]?["push_type"] == "voip")
            #expect(byToken[voip]?["apns_environment"] == "sandbox")

            // A VoIP token takes calls only (PushKit requires each push to report one): a post
            // from bob reaches alice's alert token and not her VoIP token.
            let push = ArchiveAndPushTests.pushBody(event: "voip-check", to: [alice])
            let answer = try await gateway.send(Keys.generate(), .post, "/v1/push", json: push)
            #expect(answer.json?["candidate_devices"] == 1)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_queue WHERE device_token = '\(alert)'") == 1)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_queue WHERE device_token = '\(voip)'") == 0)
        }
    }

    /// A platform this gateway has no transport for is refused, not stored to be never pushed;
    /// before that, an endpoint into the gateway's own network is refused like a relay URL.
    @Test func aPlatformWithoutATransportOrAPrivateEndpointIsRefusedAndStoresNothing() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate()
            let receiver = Base64URL.encode(P256.KeyAgreement.PrivateKey().publicKey.x963Representation)
            let keys = #""keys":{"p256dh":"\#(receiver)","auth":"\#(Base64URL.encode([UInt8](repeating: 1, count: 16)))"}"#
            func webPush(_ endpoint: String) -> String {
                #"{"platform":"webpush","subscription":{"endpoint":"\#(endpoint)",\#(keys)}}"#
            }
            let fcmToken = "fcm:" + String(repeating: "A1b2", count: 30)
            let cases: [(String, String)] = [
                (#"{"platform":"fcm","device_token":"\#(fcmToken)"}"#, "platform fcm is not enabled on this gateway"),
                (webPush("https://push.example/sub/1"), "platform webpush is not enabled on this gateway"),
                (
                    #"{"platform":"unifiedpush","endpoint":"https://up.example/UP?t=1"}"#,
                    "platform unifiedpush is not enabled on this gateway"
                ),
                (webPush("https://127.0.0.1:5432/x"), "endpoint names a non-public address"),
                (webPush("https://169.254.169.254/latest/meta-data"), "endpoint names a non-public address"),
                (webPush("https://10.1.2.3/x"), "endpoint names a non-public address"),
                (#"{"platform":"unifiedpush","endpoint":"https://localhost:8080/UP"}"#, "endpoint names a local host"),
                (#"{"platform":"unifiedpush","endpoint":"https://metadata.google.internal/x"}"#, "endpoint names a local host"),
            ]
            for (body, message) in cases {
                let response = try await gateway.send(alice, .post, "/v1/devices/register", json: body)
                #expect(response.status == .badRequest, "\(body)")
                #expect(response.errorMessage == message, "\(body)")
            }
            #expect(try await gateway.count("SELECT count(*)::int FROM devices") == 0)
        }
    }

    @Test func tokenMovesBetweenPubkeys() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate(), bob = Keys.generate()
            let token = GatewayHarness.token(0x42)
            try await gateway.send(alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(token))
            try await gateway.send(alice, .put, "/v1/conversations/archive-state", json: #"{"archived_conversation_ids":["C1"]}"#)
            #expect(
                try await gateway.count("SELECT count(*)::int FROM archived_conversations WHERE pubkey = '\(alice.publicKey.hex)'") == 1)

            #expect(
                try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(token)).status == .accepted)
            #expect(try await gateway.count("SELECT count(*)::int FROM devices WHERE pubkey = '\(bob.publicKey.hex)'") == 1)
            #expect(try await gateway.count("SELECT count(*)::int FROM devices WHERE pubkey = '\(alice.publicKey.hex)'") == 0)
            // Alice lost her last device, and with it her archive state.
            #expect(
                try await gateway.count("SELECT count(*)::int FROM archived_conversations WHERE pubkey = '\(alice.publicKey.hex)'") == 0)
        }
    }

    @Test func badRegistrationsChangeNothing() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate()
            let token = GatewayHarness.token(0x10)
            let cases: [(String, String)] = [
                ("{", "invalid json body"),
                ("[1]", "invalid json body"),
                (#"{"device_token":"\#(token)"}"#, "device_token and apns_environment are required"),
                (#"{"device_token":"  ","apns_environment":"sandbox"}"#, "device_token and apns_environment are required"),
                (#"{"device_token":"\#(token)","apns_environment":"staging"}"#, "apns_environment must be sandbox or production"),
                (
                    #"{"device_token":"xyz\#(token.dropFirst(3))","apns_environment":"sandbox"}"#,
                    "device_token must be hex with an even length of 64 to 200 characters"
                ),
                (
                    #"{"device_token":"abcd","apns_environment":"sandbox"}"#,
                    "device_token must be hex with an even length of 64 to 200 characters"
                ),
                (
                    #"{"device_token":"\#(token)a","apns_environment":"sandbox"}"#,
                    "device_token must be hex with an even length of 64 to 200 characters"
                ),
                (#"{"device_token":12,"apns_environment":"sandbox"}"#, "invalid json body: device_token must be a string"),
                (
                    #"{"device_token":"\#(token)","apns_environment":"sandbox","relay_watch":"yes"}"#,
                    "invalid json body: relay_watch must be a boolean"
                ),
                (#"{"device_token":"\#(token)","device_token":"\#(token)","apns_environment":"sandbox"}"#, "invalid json body"),
            ]
            for (body, message) in cases {
                let response = try await gateway.send(alice, .post, "/v1/devices/register", json: body)
                #expect(response.status == .badRequest, "\(body)")
                #expect(response.errorMessage == message, "\(body)")
            }
            let huge = GatewayHarness.registerBody(token, extra: #","padding":"\#(String(repeating: "x", count: 70_000))""#)
            let tooLarge = try await gateway.send(alice, .post, "/v1/devices/register", json: huge)
            #expect(tooLarge.status == .badRequest)
            #expect(tooLarge.errorMessage == "failed to read request body")
            #expect(try await gateway.count("SELECT count(*)::int FROM devices") == 0)
            // A failed request does not burn its nonce: the same nonce with a good body still works.
            let retry = try await gateway.send(
                alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(token), nonce: "reused-after-400")
            #expect(retry.status == .accepted)
        }
    }

    @Test func unknownFieldsAreIgnored() async throws {
        try await GatewayHarness.run { gateway in
            let response = try await gateway.send(
                Keys.generate(), .post, "/v1/devices/register",
                json: GatewayHarness.registerBody(GatewayHarness.token(0x11), extra: #","app_version":"1.2""#))
            #expect(response.status == .accepted)
        }
    }

    @Test func deleteAccountErasesEverything() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate(), bob = Keys.generate()
            try await gateway.send(alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x21)))
            try await gateway.send(alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x22)))
            try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x23)))
            try await gateway.send(alice, .put, "/v1/conversations/archive-state", json: #"{"archived_conversation_ids":["A"]}"#)
            let push =
                #"{"notification_type":"new_post","event_id":"e1","conversation_id":"B","recipient_pubkeys":["\#(alice.publicKey.hex)"]}"#
            try await gateway.send(bob, .post, "/v1/push", json: push)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_queue") == 2)

            let deleted = try await gateway.send(alice, .delete, "/v1/account")
            #expect(deleted.status == .ok)
            #expect(deleted.json?["devices_removed"] == 2)
            let alicePub = alice.publicKey.hex
            #expect(try await gateway.count("SELECT count(*)::int FROM devices WHERE pubkey = '\(alicePub)'") == 0)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_queue") == 0)
            #expect(try await gateway.count("SELECT count(*)::int FROM archived_conversations") == 0)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_dedupe WHERE recipient = '\(alicePub)'") == 0)
            #expect(
                try await gateway.count("SELECT count(*)::int FROM push_batches WHERE '\(alicePub)' = ANY (pubkeys)") == 0,
                "no queued push names her devices")
            #expect(try await gateway.count("SELECT count(*)::int FROM devices") == 1, "Bob's device stays")
        }
    }

    @Test func adminStatusNeedsTheToken() async throws {
        try await GatewayHarness.run { gateway in
            #expect(try await gateway.send(nil, .get, "/admin/status").status == .unauthorized)
            #expect(try await gateway.send(nil, .get, "/admin/status", headers: [.authorization: "Bearer wrong"]).status == .unauthorized)
            let status = try await gateway.send(nil, .get, "/admin/status", headers: [.authorization: "Bearer admin-secret"])
            #expect(status.status == .ok)
            #expect(status.json?["devices"] == 0)
            #expect(status.json?["queue"]?["jobs"] == 0)
        }
    }

    /// A free key cannot pile up devices: past `MAX_DEVICES_PER_PUBKEY` (10) the least recently
    /// registered device goes, and its queued jobs with it.
    @Test func anEleventhDeviceEvictsTheLeastRecentlyRegisteredWithItsJobs() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate(), bob = Keys.generate()
            let tokens = (0..<12).map { GatewayHarness.token(UInt8(0x80 + $0)) }
            func register(_ token: String) async throws {
                #expect(
                    try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(token)).status == .accepted
                )
            }
            for token in tokens.prefix(10) { try await register(token) }
            #expect(
                try await gateway.send(alice, .post, "/v1/push", json: ArchiveAndPushTests.pushBody(to: [bob])).json?["candidate_devices"]
                    == 10)
            // Registering the first again makes it the most recent: the second and third are now the oldest.
            try await register(tokens[0])
            try await register(tokens[10])
            try await register(tokens[11])
            var remaining: [String] = []
            for try await token in try await gateway.database.query(
                "SELECT device_token FROM devices ORDER BY device_token", logger: TestDatabase.logger
            )
            .decode(String.self) { remaining.append(token) }
            #expect(remaining == ([tokens[0]] + tokens[3...]).sorted())
            #expect(try await gateway.count("SELECT count(*)::int FROM push_queue") == 8, "the evicted devices' jobs went with them")
            #expect(
                try await gateway.count("SELECT count(*)::int FROM push_queue WHERE device_token IN ('\(tokens[1])', '\(tokens[2])')") == 0)
            // Another pubkey's devices are not touched.
            #expect(
                try await gateway.send(alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x9F)))
                    .status == .accepted)
            #expect(try await gateway.count("SELECT count(*)::int FROM devices") == 11)
        }
    }
}
