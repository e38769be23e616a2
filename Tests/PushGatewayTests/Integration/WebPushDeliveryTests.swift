import APNsSandbox
import Foundation
import GatewayWire
import HTTPTypes
import HummingbirdTesting
import NostrProtocol
import PostgresNIO
import PushGateway
import Synchronization
import TestSupport
import Testing
import WebPush

/// Web Push and UnifiedPush delivery through the gateway's own worker to the sandbox's Web Push
/// face over HTTP/2 and TLS: each message is encrypted to its subscription and decrypted by the
/// sandbox, signed with the gateway's VAPID key, and each answer is acted on as a push service
/// means it.
@Suite(.serialized) struct WebPushDeliveryTests {
    static let subject = "mailto:ops@push.example.com"

    /// A gateway that delivers to `sandbox`, with Web Push on and loopback endpoints allowed.
    static func withGateway(_ body: @Sendable @escaping (GatewayHarness, SandboxFixture) async throws -> Void) async throws {
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(
                deliver: true, apns: sandbox.apns,
                webPush: WebPushSettings(subject: subject, caFile: sandbox.caFile, allowPrivateEndpoints: true)
            ) { gateway in try await body(gateway, sandbox) }
        }
    }

    /// A subscription as a browser gets it from its push service: `{endpoint, keys}`.
    static func subscribe(_ sandbox: SandboxFixture, _ query: [String: String] = [:], host: String = "localhost") throws -> JSONValue {
        let answer = sandbox.state.webPush.answer(
            method: "POST", path: "/webpush/subscriptions", query: query, headers: [], body: [],
            authority: "\(host):\(sandbox.server.port)")
        #expect(answer.status == 201)
        return try #require(answer.json)
    }

    static func registerBody(_ subscription: JSONValue) -> String {
        JSONValue.object(["platform": "webpush", "subscription": subscription]).serialized
    }

    static func deliveries(_ sandbox: SandboxFixture, to subscription: JSONValue) -> [WebPushService.Delivery] {
        let id = subscription["endpoint"]?.stringValue?.split(separator: "/").last.map(String.init)
        return sandbox.state.webPush.recorded.filter { $0.subscription == id }
    }

    @Test func aTypedPushReachesTheBrowserEncryptedAndSignedBesideTheIPhone() async throws {
        try await Self.withGateway { gateway, sandbox in
            let alice = Keys.generate(), bob = Keys.generate()
            let browser = try Self.subscribe(sandbox)
            #expect(try await gateway.send(bob, .post, "/v1/devices/register", json: Self.registerBody(browser)).status == .accepted)
            let phone = GatewayHarness.token(0x61)
            #expect(
                try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(phone)).status == .accepted)

            let push = ArchiveAndPushTests.pushBody(event: "ev-web", conversation: "conv-web", to: [bob])
            #expect(try await gateway.send(alice, .post, "/v1/push", json: push).json?["candidate_devices"] == 2)
            #expect(try await GatewayHarness.eventually { !Self.deliveries(sandbox, to: browser).isEmpty && !sandbox.delivered().isEmpty })

            let delivery = try #require(Self.deliveries(sandbox, to: browser).first)
            #expect(delivery.status == 201, "\(delivery.reason ?? "")")
            let payload = try JSONValue(parsing: Array((delivery.plaintext ?? "").utf8))
            #expect(payload["type"] == "new_post")
            #expect(payload["event_id"] == "ev-web")
            #expect(payload["conversation_id"] == "conv-web")
            #expect(payload["title"] == "New post in linkstr")
            #expect(Int(delivery.ttl ?? "") ?? 0 > 0)
            #expect(delivery.urgency == "normal")
            #expect(delivery.topic?.count == 32)
            // Signed with the key browsers are given.
            let published = try await gateway.send(nil, .get, "/v1/webpush/vapid-public-key").json?["public_key"]?.stringValue
            #expect(published != nil && delivery.vapidKey == published)
            #expect(try await gateway.count("SELECT count(*)::int FROM vapid_key") == 1, "generated once and kept")
            #expect(sandbox.delivered().map(\.deviceToken) == [phone], "the iPhone got its own push")
            #expect(try await GatewayHarness.eventually { try await gateway.count("SELECT count(*)::int FROM push_queue") == 0 })
        }
    }

    @Test func aUnifiedPushEndpointWithoutKeysGetsThePlainJSON() async throws {
        try await Self.withGateway { gateway, sandbox in
            let bob = Keys.generate()
            let distributor = try Self.subscribe(sandbox, ["plain": "1"])
            #expect(distributor["keys"] == nil)
            let body = JSONValue.object(["platform": "unifiedpush", "endpoint": distributor["endpoint"] ?? .null]).serialized
            #expect(try await gateway.send(bob, .post, "/v1/devices/register", json: body).status == .accepted)
            let push = ArchiveAndPushTests.pushBody(event: "ev-up", to: [bob])
            #expect(try await gateway.send(Keys.generate(), .post, "/v1/push", json: push).status == .accepted)
            #expect(try await GatewayHarness.eventually { !Self.deliveries(sandbox, to: distributor).isEmpty })
            let delivery = try #require(Self.deliveries(sandbox, to: distributor).first)
            #expect(delivery.status == 201)
            #expect(try JSONValue(parsing: Array((delivery.plaintext ?? "").utf8))["event_id"] == "ev-up")
        }
    }

    /// 404/410 remove the subscription; 403 (from a service that is not a browser's, no
    /// configuration alarm) and 413 drop the job and keep it; 429 waits out its Retry-After and 503 backs off, then each delivers the same message.
    @Test func eachAnswerIsActedOnAsThePushServiceMeansIt() async throws {
        try await Self.withGateway { gateway, sandbox in
            var subscriptions: [String: JSONValue] = [:]
            for (name, query) in [
                ("gone", ["answer": "410"]), ("unknown", ["answer": "404"]), ("refused", ["answer": "403"]),
                ("large", ["answer": "413"]), ("busy", ["answer": "429", "times": "1", "retry_after": "3"]),
                ("down", ["answer": "503", "times": "1"]),
            ] {
                let subscription = try Self.subscribe(sandbox, query)
                subscriptions[name] = subscription
                #expect(
                    try await gateway.send(Keys.generate(), .post, "/v1/devices/register", json: Self.registerBody(subscription)).status
                        == .accepted)
            }
            let owners = try await gateway.count("SELECT count(DISTINCT pubkey)::int FROM devices")
            #expect(owners == 6)
            // One push to every owner.
            var pubkeys: [String] = []
            for try await pubkey in try await gateway.database.query("SELECT pubkey FROM devices", logger: TestDatabase.logger).decode(
                String.self)
            {
                pubkeys.append(pubkey)
            }
            let list = pubkeys.map { "\"\($0)\"" }.joined(separator: ",")
            let push = #"{"notification_type":"new_post","event_id":"ev-answers","conversation_id":"c","recipient_pubkeys":[\#(list)]}"#
            #expect(try await gateway.send(Keys.generate(), .post, "/v1/push", json: push).json?["candidate_devices"] == 6)

            let named = subscriptions
            let endpoint = { (name: String) in named[name]?["endpoint"]?.stringValue ?? "" }
            let devices = "SELECT count(*)::int FROM devices WHERE device_token = "
            let busySubscription = try #require(named["busy"]), downSubscription = try #require(named["down"])
            #expect(
                try await GatewayHarness.eventually(within: 15) {
                    let answered = Self.deliveries(sandbox, to: busySubscription).map(\.status)
                    let recovered = Self.deliveries(sandbox, to: downSubscription).map(\.status)
                    let queued = try await gateway.count("SELECT count(*)::int FROM push_queue")
                    return answered == [429, 201] && recovered == [503, 201] && queued == 0
                })
            for subscription in [busySubscription, downSubscription] {
                let attempts = Self.deliveries(sandbox, to: subscription)
                try #require(attempts.count == 2)
                #expect(attempts[0].topic == attempts[1].topic, "the retry is the same message")
            }
            // The 429 asked for 3 s, more than the first backoff (2 to 2.4 s): the retry waited that long.
            let busy = Self.deliveries(sandbox, to: busySubscription)
            let waited = busy[1].receivedAt.timeIntervalSince(busy[0].receivedAt)
            #expect(waited >= 3, "Retry-After honoured: retried after \(waited) s")
            #expect(try await gateway.count(devices + "'\(endpoint("down"))'") == 1, "a 5xx is the service's trouble: kept")
            #expect(try await gateway.count(devices + "'\(endpoint("gone"))'") == 0, "410 removes the subscription")
            #expect(try await gateway.count(devices + "'\(endpoint("unknown"))'") == 0, "404 removes the subscription")
            #expect(try await gateway.count(devices + "'\(endpoint("refused"))'") == 1, "403 says nothing of the device: kept")
            // The sandbox is not a browser's push service: its 403 raises no configuration alarm.
            let status = try await FCMDeliveryTests.adminStatus(gateway)
            #expect(status["configuration_errors"]?["webpush"] == nil, "\(status["configuration_errors"] ?? .null)")
            #expect(try await gateway.count(devices + "'\(endpoint("large"))'") == 1, "413 is the gateway's bug: kept")
            #expect(Self.deliveries(sandbox, to: try #require(named["refused"])).count == 1, "a configuration error is not retried")
            #expect(Self.deliveries(sandbox, to: try #require(named["large"])).count == 1, "nor is a message too large")
        }
    }

    /// pywebpush, a sender nobody here wrote, POSTs to the sandbox's Web Push face over HTTP/1.1:
    /// its VAPID JWT verifies and its `aes128gcm` body decrypts there, so the sandbox that tests
    /// the gateway speaks the wire format real senders use.
    @Test(.enabled(if: RustNostrPeer.enabled, "set LINKSTR_SKIP_INTEROP=1 to skip"))
    func pywebpushSendsToTheSandboxAndIsDecrypted() async throws {
        try await SandboxFixture.with { sandbox in
            let subscription = try Self.subscribe(sandbox)
            let key = VAPIDKey()
            let message = #"{"type":"new_message","conversation_id":"c1","event_id":"e1"}"#
            let answer = try await RustNostrPeer.script(
                "webpush_peer.py",
                [
                    JSONValue.object([
                        "op": "send", "subscription": subscription, "data": .string(message), "vapid_private_key": .string(key.encoded),
                        "subject": "mailto:interop@example.com", "ca_file": .string(sandbox.caFile),
                    ]).serialized
                ])
            #expect(answer["status"] == .integer(201), "\(answer)")
            let delivery = try #require(Self.deliveries(sandbox, to: subscription).first)
            #expect(delivery.status == 201, "\(delivery.reason ?? "")")
            #expect(delivery.plaintext == message)
            #expect(delivery.vapidKey == key.publicKey)
            #expect(delivery.ttl == "60")
        }
    }

    static func job(_ id: Int64, to subscription: JSONValue) throws -> ClaimedJob {
        let keys = try subscription["keys"].map {
            try WebPushSubscriptionKeys(p256dh: $0["p256dh"]?.stringValue ?? "", auth: $0["auth"]?.stringValue ?? "")
        }
        let endpoint = try PushEndpoint(subscription["endpoint"]?.stringValue ?? "")
        return ClaimedJob(
            id: id, apnsID: UUID(),
            destination: keys.map { .webPush(endpoint: endpoint, keys: $0) } ?? .unifiedPush(endpoint: endpoint, keys: nil),
            pubkey: "p", topic: "app", deviceUpdatedAt: Date(),
            notification: APNsNotification(type: .newMessage, eventID: "e\(id)", conversationID: "c"),
            attempts: 1, expiresAt: Date().addingTimeInterval(900))
    }

    /// A sender on its own, with a VAPID key given (no database read) and a short send limit.
    static func sender(
        _ sandbox: SandboxFixture?, allowPrivate: Bool = true, sendLimit: Duration = .seconds(10),
        now: @escaping @Sendable () -> Date = Date.init, resolver: (@Sendable (String) async throws -> [IPAddress])? = nil
    ) throws -> WebPushSender {
        let unused = PostgresClient(configuration: .init(host: "127.0.0.1", username: "x", password: nil, database: "x", tls: .disable))
        return try WebPushSender(
            settings: WebPushSettings(subject: subject, caFile: sandbox?.caFile, allowPrivateEndpoints: allowPrivate),
            keys: VAPIDKeyStore(database: Database(unused), configured: VAPIDKey(), logger: TestDatabase.logger),
            logger: TestDatabase.logger, now: now,
            sendLimit: sendLimit, resolver: resolver)
    }

    /// An endpoint that never answers is cut at the send limit and retried later, and holds up
    /// nothing else: a healthy subscription's push in the same round is delivered.
    @Test func aServiceThatNeverAnswersIsCutAtTheSendLimit() async throws {
        try await SandboxFixture.with { sandbox in
            // The healthy push must be delivered within the limit too, on however busy a machine.
            let sender = try Self.sender(sandbox, sendLimit: .seconds(5))
            let stalled = try Self.subscribe(sandbox, ["stall": "1"]), healthy = try Self.subscribe(sandbox)
            let started = ContinuousClock.now
            let results = await sender.send([try Self.job(1, to: stalled), try Self.job(2, to: healthy)])
            let elapsed = ContinuousClock.now - started
            #expect(results.map(\.outcome) == [.retry(reason: "Timeout"), .delivered])
            #expect(elapsed < .seconds(15), "cut at the limit, not left to the service: \(elapsed)")
            #expect(Self.deliveries(sandbox, to: stalled).count == 1, "the request did reach the stalling service")
            await sender.shutdown()
        }
    }

    /// Without WEBPUSH_ALLOW_PRIVATE_ENDPOINTS a private endpoint is never contacted (dropped, the
    /// device kept), and one whose name does not resolve is retried later, never handed to the
    /// HTTP client's own lookup.
    @Test func aPrivateOrUnresolvableEndpointIsNeverContacted() async throws {
        try await SandboxFixture.with { sandbox in
            let sender = try Self.sender(sandbox, allowPrivate: false)
            let local = try Self.subscribe(sandbox)
            let unresolvable: JSONValue = ["endpoint": "https://push.nowhere.linkstr-test.example/sub/1"]
            let results = await sender.send([try Self.job(1, to: local), try Self.job(2, to: unresolvable)])
            #expect(results.map(\.outcome) == [.drop(reason: "EndpointNotPublic"), .retry(reason: "EndpointUnresolvable")])
            #expect(Self.deliveries(sandbox, to: local).isEmpty, "nothing reached the loopback service")
            await sender.shutdown()
        }
    }

    /// A send goes to the address its endpoint's check judged, never to a lookup of the HTTP
    /// client's own (DNS rebinding): the host here is an RFC 6761 `.invalid` name that no name
    /// server answers, so only a connection pinned to the test's lookup reaches the sandbox, whose
    /// certificate names that host. One lookup serves the verdict's minute; the next verdict's
    /// new address is where the next send goes, not the connection already open.
    @Test func anEndpointIsContactedAtTheAddressItsCheckJudged() async throws {
        try await SandboxFixture.with(hostnames: ["push.invalid"]) { sandbox in
            let lookups = Locked<[String]>([])
            let answers = Locked<[IPAddress]>([.v4([127, 0, 0, 1])])
            let clock = Locked(Date())
            let sender = try Self.sender(
                sandbox, now: { clock.withLock { $0 } },
                resolver: { name in
                    lookups.withLock { $0.append(name) }
                    return answers.withLock { $0 }
                })
            let subscription = try Self.subscribe(sandbox, host: "push.invalid")
            #expect(subscription["endpoint"]?.stringValue?.hasPrefix("https://push.invalid:") == true)

            let results = [await sender.send([try Self.job(1, to: subscription)]), await sender.send([try Self.job(2, to: subscription)])]
            #expect(results.flatMap { $0.map(\.status) } == [201, 201])
            #expect(Self.deliveries(sandbox, to: subscription).count == 2, "both reached the sandbox over TLS for push.invalid")
            #expect(lookups.withLock { $0 } == ["push.invalid"], "one lookup for the verdict's minute")

            // The next verdict answers 127.0.0.2, where nothing listens (the sandbox is bound to
            // 127.0.0.1): the send is refused there instead of reusing the open connection.
            answers.withLock { $0 = [.v4([127, 0, 0, 2])] }
            clock.withLock { $0 += 61 } // past the verdict's minute
            let moved = await sender.send([try Self.job(3, to: subscription)])
            #expect(moved.map(\.outcome) == [.retry(reason: "ConnectionError")])
            #expect(lookups.withLock { $0 }.count == 2)
            #expect(Self.deliveries(sandbox, to: subscription).count == 2)

            // With two addresses judged, a send that fails on one moves the host's next send to
            // the other, as a connection of the HTTP client's own would have tried the next.
            answers.withLock { $0 = [.v4([127, 0, 0, 2]), .v4([127, 0, 0, 1])] }
            clock.withLock { $0 += 61 }
            let stillThere = await sender.send([try Self.job(4, to: subscription)])
            #expect(stillThere.map(\.outcome) == [.retry(reason: "ConnectionError")], "127.0.0.2 is still judged: its client is kept")
            let next = await sender.send([try Self.job(5, to: subscription)])
            #expect(next.map(\.status) == [201])
            #expect(Self.deliveries(sandbox, to: subscription).count == 3)
            await sender.shutdown()
        }
    }

    @Test func theVAPIDKeyIsKeptAcrossRestartsAndAbsentWhenWebPushIsOff() async throws {
        try await TestDatabase.with { url, database in
            let settings = WebPushSettings(subject: Self.subject)
            let collected = Mutex<[String?]>([])
            for _ in 0..<2 {
                try await GatewayHarness.run(url: url, database: database, webPush: settings) { gateway in
                    let answer = try await gateway.send(nil, .get, "/v1/webpush/vapid-public-key")
                    #expect(answer.status == .ok)
                    collected.withLock { $0.append(answer.json?["public_key"]?.stringValue) }
                }
            }
            let keys = collected.withLock { $0 }
            #expect(keys[0] != nil && keys[0] == keys[1], "one key for every start")
            #expect(Base64URL.decode(keys[0] ?? "")?.count == 65, "a P-256 point, as applicationServerKey takes it")
            try await GatewayHarness.run(url: url, database: database) { gateway in
                #expect(try await gateway.send(nil, .get, "/v1/webpush/vapid-public-key").status == .notFound)
                let subscription = JSONValue.object([
                    "endpoint": "https://push.example.com/sub/1",
                    "keys": [
                        "p256dh": .string(Base64URL.encode(Array(repeating: 4, count: 1) + Array(repeating: 1, count: 64))),
                        "auth": "AAAAAAAAAAAAAAAAAAAAAA",
                    ],
                ])
                let refused = try await gateway.send(Keys.generate(), .post, "/v1/devices/register", json: Self.registerBody(subscription))
                #expect(refused.status == .badRequest)
            }
        }
    }
}
