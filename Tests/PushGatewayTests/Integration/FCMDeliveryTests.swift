import APNsSandbox
import AsyncHTTPClient
import Foundation
import GatewayWire
import HTTPTypes
import HummingbirdTesting
import NIOSSL
import NostrProtocol
import PushGateway
import Synchronization
import TestSupport
import Testing

/// FCM delivery through the gateway's own worker to the sandbox's FCM face over HTTP/2 and TLS:
/// a real OAuth JWT-bearer exchange against the face's token endpoint, `messages:send` with
/// Google's error JSON, and each answer acted on as FCM means it.
@Suite(.serialized) struct FCMDeliveryTests {
    /// A gateway that delivers to `sandbox`, with FCM on: the sandbox's service account, or with
    /// `strangerKey` another sandbox's key in its place (valid RSA, unknown to this one).
    static func withGateway(
        strangerKey: Bool = false, _ body: @Sendable @escaping (GatewayHarness, SandboxFixture) async throws -> Void
    ) async throws {
        try await SandboxFixture.with { sandbox in
            var fcm = try sandbox.fcm
            if strangerKey {
                let stranger = try FCMService(projectID: "elsewhere", tokenLifetimeSeconds: 3600)
                fcm.serviceAccount?.privateKeyPEM = try FCMServiceAccount(json: stranger.serviceAccountJSON(origin: "https://x"))
                    .privateKeyPEM
            }
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, fcm: fcm) { gateway in try await body(gateway, sandbox) }
        }
    }

    /// A registration token FCM would issue, with `prefix` choosing the sandbox's script.
    static func token(_ prefix: String = "", _ seed: Int = 0) -> String {
        prefix + "-dQw4w9WgXcQ:APA91bH" + String(repeating: "k\(seed % 10)", count: 40)
    }

    static func registerBody(_ token: String) -> String {
        JSONValue.object(["platform": "fcm", "device_token": .string(token)]).serialized
    }

    static func deliveries(_ sandbox: SandboxFixture, to token: String) -> [FCMService.Delivery] {
        sandbox.state.fcm.recorded.filter { $0.token == token }
    }

    static func adminStatus(_ gateway: GatewayHarness) async throws -> JSONValue {
        let response = try await gateway.client.execute(
            uri: "/admin/status", method: .get, headers: [.authorization: "Bearer admin-secret"])
        return try #require(response.json)
    }

    @Test func aTypedPushReachesTheAndroidPhoneBesideTheIPhone() async throws {
        try await Self.withGateway { (gateway: GatewayHarness, sandbox: SandboxFixture) async throws in
            let alice = Keys.generate(), bob = Keys.generate()
            let android = Self.token()
            #expect(try await gateway.send(bob, .post, "/v1/devices/register", json: Self.registerBody(android)).status == .accepted)
            let phone = GatewayHarness.token(0x62)
            #expect(
                try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(phone)).status == .accepted)
            let listed = try await gateway.send(bob, .get, "/v1/devices").json?["devices"]?.arrayValue ?? []
            #expect(listed.contains { $0["platform"] == "fcm" && $0["device_token"] == .string(android) }, "\(listed)")

            let push = ArchiveAndPushTests.pushBody(event: "ev-fcm", conversation: "conv-fcm", to: [bob])
            #expect(try await gateway.send(alice, .post, "/v1/push", json: push).json?["candidate_devices"] == 2)
            #expect(try await GatewayHarness.eventually { !Self.deliveries(sandbox, to: android).isEmpty && !sandbox.delivered().isEmpty })

            let delivery = try #require(Self.deliveries(sandbox, to: android).first)
            #expect(delivery.status == 200, "\(delivery.reason ?? "")")
            let message = try #require(delivery.message)
            #expect(message["data"]?["type"] == "new_post")
            #expect(message["data"]?["event_id"] == "ev-fcm")
            #expect(message["data"]?["conversation_id"] == "conv-fcm")
            #expect(message["data"]?["push_id"]?.stringValue?.count == 36)
            #expect(message["notification"]?["title"] == "New post in linkstr")
            #expect(message["android"]?["priority"] == "high")
            #expect(message["android"]?["collapse_key"] == nil, "a typed push keeps its own place: FCM holds four collapse keys")
            #expect(message["android"]?["notification"]?["tag"] == "ev-fcm", "shown once per event, as APNs collapses it")
            #expect(Int(message["android"]?["ttl"]?.stringValue?.dropLast() ?? "") ?? 0 > 0)
            #expect(delivery.headers["x-goog-api-format-version"] == "2")
            #expect(sandbox.delivered().map(\.deviceToken) == [phone], "the iPhone got its own push")
            #expect(sandbox.state.fcm.exchanges == 1)
            #expect(try await GatewayHarness.eventually { try await gateway.count("SELECT count(*)::int FROM push_queue") == 0 })
        }
    }

    /// Through the gateway to the sandbox, a call is a high-priority data message that lives 30 s
    /// and a background push a normal-priority one; neither carries text for Android to show.
    @Test func aCallAndABackgroundPushReachTheAndroidPhoneAsDataMessages() async throws {
        try await Self.withGateway { (gateway: GatewayHarness, sandbox: SandboxFixture) async throws in
            let caller = Keys.generate(), bob = Keys.generate()
            let android = Self.token("", 8)
            #expect(try await gateway.send(bob, .post, "/v1/devices/register", json: Self.registerBody(android)).status == .accepted)
            let call = ArchiveAndPushTests.pushBody("incoming_call", event: "call-fcm", conversation: "room-fcm", to: [bob])
            #expect(try await gateway.send(caller, .post, "/v1/push", json: call).json?["candidate_devices"] == 1)
            let sync = ArchiveAndPushTests.pushBody("new_message", event: "sync-fcm", to: [bob], extra: #","push_type":"background""#)
            #expect(try await gateway.send(caller, .post, "/v1/push", json: sync).json?["candidate_devices"] == 1)
            #expect(try await GatewayHarness.eventually { Self.deliveries(sandbox, to: android).count == 2 })

            let messages = Self.deliveries(sandbox, to: android).compactMap(\.message)
            let rung = try #require(messages.first { $0["data"]?["type"] == "incoming_call" })
            #expect(rung["notification"] == nil, "the app rings itself")
            #expect(rung["android"]?["priority"] == "high" && rung["android"]?["ttl"] == "30s")
            #expect(rung["android"]?["collapse_key"] == nil && rung["android"]?["notification"] == nil, "every call rings")
            #expect(rung["data"]?["event_id"] == "call-fcm" && rung["data"]?["conversation_id"] == "room-fcm")
            let woken = try #require(messages.first { $0["data"]?["event_id"] == "sync-fcm" })
            #expect(woken["notification"] == nil)
            #expect(woken["android"]?["priority"] == "normal")
            #expect(woken["data"]?["background"] == "1" && woken["data"]?["type"] == "new_message")
            #expect(Self.deliveries(sandbox, to: android).allSatisfy { $0.status == 200 })
        }
    }

    /// UNREGISTERED and INVALID_ARGUMENT on the token remove the device; SENDER_ID_MISMATCH and
    /// THIRD_PARTY_AUTH_ERROR keep it and show in `/admin/status`; INVALID_ARGUMENT on a field of
    /// the message drops the job and keeps the device; QUOTA_EXCEEDED and UNAVAILABLE are retried
    /// and then delivered, with the same `push_id` on every attempt.
    @Test func eachAnswerIsActedOnAsFCMMeansIt() async throws {
        try await Self.withGateway { (gateway: GatewayHarness, sandbox: SandboxFixture) async throws in
            let tokens = [
                "gone": Self.token("unregistered", 1), "invalid": Self.token("invalid", 2), "mismatch": Self.token("mismatch", 3),
                "thirdparty": Self.token("thirdparty", 4), "quota": Self.token("quota1", 5), "down": Self.token("unavailable1", 6),
                "badmessage": Self.token("badmessage", 7),
            ]
            var owners: [Keys] = []
            for token in tokens.values {
                let owner = Keys.generate()
                owners.append(owner)
                #expect(try await gateway.send(owner, .post, "/v1/devices/register", json: Self.registerBody(token)).status == .accepted)
            }
            let push = ArchiveAndPushTests.pushBody(event: "ev-answers", to: owners)
            #expect(try await gateway.send(Keys.generate(), .post, "/v1/push", json: push).json?["candidate_devices"] == 7)
            @Sendable func delivered(_ name: String) -> Bool {
                Self.deliveries(sandbox, to: tokens[name]!).contains { $0.status == 200 }
            }
            #expect(
                try await GatewayHarness.eventually(within: 30) {
                    try await gateway.count("SELECT count(*)::int FROM push_queue") == 0 && delivered("quota") && delivered("down")
                })
            let devices = "SELECT count(*)::int FROM devices WHERE device_token = "
            #expect(try await gateway.count(devices + "'\(tokens["gone"]!)'") == 0, "UNREGISTERED removes the device")
            #expect(try await gateway.count(devices + "'\(tokens["invalid"]!)'") == 0, "a refused token removes the device")
            #expect(try await gateway.count(devices + "'\(tokens["mismatch"]!)'") == 1, "the gateway's own account: kept")
            #expect(try await gateway.count(devices + "'\(tokens["thirdparty"]!)'") == 1, "the app's APNs/Web Push credentials: kept")
            #expect(
                try await gateway.count(devices + "'\(tokens["badmessage"]!)'") == 1,
                "a field of the message refused: the gateway's bug, kept")
            #expect(Self.deliveries(sandbox, to: tokens["mismatch"]!).count == 1, "a configuration error is not retried")
            #expect(Self.deliveries(sandbox, to: tokens["badmessage"]!).count == 1, "nor is a message FCM refuses")
            for name in ["quota", "down"] {
                let attempts = Self.deliveries(sandbox, to: tokens[name]!)
                #expect(
                    attempts.map(\.status) == [attempts[0].status, 200] && attempts[0].status != 200, "\(name): \(attempts.map(\.status))")
                let ids = Set(attempts.compactMap { $0.message?["data"]?["push_id"]?.stringValue })
                #expect(ids.count == 1, "\(name): one message identity across retries")
            }
            // The 429 asked for 3 s, more than the first backoff: the retry waited that long.
            let quota = Self.deliveries(sandbox, to: tokens["quota"]!)
            try #require(quota.count >= 2)
            let waited = quota[1].receivedAt.timeIntervalSince(quota[0].receivedAt)
            #expect(waited >= Double(FCMService.quotaRetryAfterSeconds), "Retry-After honoured: retried after \(waited) s")

            let status = try await Self.adminStatus(gateway)
            let errors = try #require(status["configuration_errors"]?["fcm"])
            #expect(errors["count"] == 2, "\(status)")
            #expect(["SENDER_ID_MISMATCH", "THIRD_PARTY_AUTH_ERROR"].contains(errors["last_reason"]?.stringValue ?? ""))
            let failures = status["recent_push_failures"]?.arrayValue ?? []
            #expect(failures.contains { $0["platform"] == "fcm" && $0["reason"] == "UNREGISTERED" }, "\(failures)")
        }
    }

    /// Twenty devices, one exchange: the access token is shared by every send.
    /// The twenty are sent at once over the sender's HTTP/2 connections (`FCM_CONNECTIONS`), the
    /// hourly token exchange on one of its own.
    @Test func oneTokenExchangeServesManySends() async throws {
        try await Self.withGateway { (gateway: GatewayHarness, sandbox: SandboxFixture) async throws in
            let owners = (0..<20).map { _ in Keys.generate() }
            for (seed, owner) in owners.enumerated() {
                let body = Self.registerBody(Self.token("many\(seed)", seed))
                #expect(try await gateway.send(owner, .post, "/v1/devices/register", json: body).status == .accepted)
            }
            let connectionsBefore = sandbox.state.statistics.openConnections
            let push = ArchiveAndPushTests.pushBody(event: "ev-many", to: owners)
            #expect(try await gateway.send(Keys.generate(), .post, "/v1/push", json: push).json?["candidate_devices"] == 20)
            #expect(try await GatewayHarness.eventually { sandbox.state.fcm.recorded.filter { $0.status == 200 }.count == 20 })
            #expect(sandbox.state.fcm.exchanges == 1)
            let opened = sandbox.state.statistics.openConnections - connectionsBefore
            #expect(
                opened <= 1 + FCMSettings.defaultConnections,
                "one connection for the exchange and at most FCM_CONNECTIONS for the twenty sends, not one a request: \(opened)")
        }
    }

    /// A sender on its own, to the sandbox's face, on a clock the test moves.
    static func sender(_ sandbox: SandboxFixture, now: @escaping @Sendable () -> Date) throws -> FCMSender {
        try FCMSender(settings: try sandbox.fcm, logger: TestDatabase.logger, now: now)
    }

    static func job(_ id: Int64, token: String) -> ClaimedJob {
        ClaimedJob(
            id: id, apnsID: UUID(), destination: .fcm(token: token), pubkey: "p", topic: GatewayHarness.topic, deviceUpdatedAt: Date(),
            notification: APNsNotification(type: .newMessage, eventID: "e\(id)", conversationID: "c"), attempts: 1,
            expiresAt: Date().addingTimeInterval(900))
    }

    /// FCM refuses a token before it expires (a rotated key): the sender exchanges a new one and
    /// the message is still delivered, at once. A token refused within a minute of its exchange
    /// is a configuration error instead: another exchange would only be refused again.
    @Test func aRevokedAccessTokenIsReplacedUnlessItIsFresh() async throws {
        try await SandboxFixture.with { sandbox in
            let clock = Mutex(Date())
            let sender = try Self.sender(sandbox) { clock.withLock { $0 } }
            let android = Self.token("revoked")
            func revoke() {
                let answer = sandbox.state.fcm.answer(
                    method: "POST", path: "/fcm/control/revoke-tokens", query: [:], headers: [], body: [], authority: "")
                #expect(answer.status == 200)
            }
            #expect(await sender.send(Self.job(1, token: android)).outcome == .delivered)
            revoke()
            let fresh = await sender.send(Self.job(2, token: android))
            #expect(fresh.outcome == .configurationError(reason: "UNAUTHENTICATED"), "\(fresh)")
            #expect(sandbox.state.fcm.exchanges == 1, "no exchange for a token refused at once")

            clock.withLock { $0 = $0.addingTimeInterval(120) }
            let later = await sender.send(Self.job(3, token: android))
            #expect(later.outcome == .delivered, "\(later)")
            #expect(sandbox.state.fcm.exchanges == 2)
            #expect(Self.deliveries(sandbox, to: android).map(\.status) == [200, 401, 401, 200])
            #expect(Self.deliveries(sandbox, to: android).last?.message?["data"]?["event_id"] == "e3")
            await sender.shutdown()
        }
    }

    /// Five messages of one round refused with a revoked token: one new exchange for all five,
    /// and each sent once more at once and delivered.
    @Test func aRoundRefusedForItsTokenIsSentAgainWithOneNewToken() async throws {
        try await SandboxFixture.with { sandbox in
            let clock = Mutex(Date())
            let sender = try Self.sender(sandbox) { clock.withLock { $0 } }
            #expect(await sender.send(Self.job(1, token: Self.token("round-first"))).outcome == .delivered)
            let answer = sandbox.state.fcm.answer(
                method: "POST", path: "/fcm/control/revoke-tokens", query: [:], headers: [], body: [], authority: "")
            #expect(answer.status == 200)
            clock.withLock { $0 = $0.addingTimeInterval(120) }
            let tokens = (0..<5).map { Self.token("round", $0) }
            let results = await sender.send(tokens.enumerated().map { Self.job(Int64(10 + $0), token: $1) })
            #expect(results.map(\.outcome) == Array(repeating: .delivered, count: 5), "\(results)")
            #expect(sandbox.state.fcm.exchanges == 2, "one exchange for the five refused, not one each")
            for token in tokens {
                #expect(Self.deliveries(sandbox, to: token).map(\.status) == [401, 200], "\(token)")
            }
            await sender.shutdown()
        }
    }

    /// A message FCM never answers is cut at the send limit and retried later, and takes nothing
    /// else with it: the other message of the round, on the same connection, is delivered, and the
    /// connection stays open past the time its watchdog would close one left unanswered.
    @Test func aMessageNeverAnsweredIsCutAtTheSendLimitAlone() async throws {
        try await SandboxFixture.with { sandbox in
            let sender = try FCMSender(settings: try sandbox.fcm, logger: TestDatabase.logger, sendLimit: .seconds(3))
            let stalled = Self.token("stall"), healthy = Self.token("healthy")
            let started = ContinuousClock.now
            // Ids 2 and 4: the same one of the sender's connections.
            let results = await sender.send([Self.job(2, token: stalled), Self.job(4, token: healthy)])
            let elapsed = ContinuousClock.now - started
            #expect(results.map(\.outcome) == [.retry(reason: "Timeout"), .delivered], "\(results)")
            #expect(elapsed >= .seconds(3) && elapsed < .seconds(10), "cut at the limit, not left to the service: \(elapsed)")
            #expect(Self.deliveries(sandbox, to: stalled).count == 1, "the request did reach FCM")
            #expect(Self.deliveries(sandbox, to: healthy).map(\.status) == [200])
            // The stalled stream was reset, so the watchdog (every 2 s, for requests older than
            // 3 s) finds nothing overdue: the connection is still open, and carries the next send.
            let open = sandbox.state.statistics.openConnections
            try await Task.sleep(for: .seconds(5))
            #expect(sandbox.state.statistics.openConnections == open, "the connection stayed open")
            let later = Self.token("healthy", 1)
            #expect(await sender.send(Self.job(6, token: later)).outcome == .delivered)
            #expect(sandbox.state.statistics.openConnections == open, "and carried the next message")
            await sender.shutdown()
        }
    }

    /// A message still waiting for a stream when the limit passes is never sent: with one stream
    /// allowed and a stalled message on it, the message behind it fails as a timeout and FCM never
    /// sees it (sent late, it could arrive after the job was already given up and retried).
    @Test func aMessageCutBeforeItsStreamOpensIsNeverSent() async throws {
        try await SandboxFixture.with(maxConcurrentStreams: 1) { sandbox in
            let sender = try FCMSender(settings: try sandbox.fcm, logger: TestDatabase.logger, sendLimit: .seconds(2))
            let stalled = Self.token("stall", 2), waiting = Self.token("waiting")
            let results = await sender.send([Self.job(2, token: stalled), Self.job(4, token: waiting)])
            #expect(results.map(\.outcome) == [.retry(reason: "Timeout"), .retry(reason: "Timeout")], "\(results)")
            #expect(Self.deliveries(sandbox, to: stalled).count == 1)
            // The stalled stream's reset frees the only stream: had the waiting message stayed
            // queued, it would go out now.
            try await Task.sleep(for: .seconds(1))
            #expect(Self.deliveries(sandbox, to: waiting).isEmpty, "the message cut while it waited never reached FCM")
            await sender.shutdown()
        }
    }

    /// A service account the token endpoint refuses (here: a key the sandbox does not know) is
    /// the operator's problem: every push fails as a configuration error shown in
    /// `/admin/status`, nothing reaches FCM, and the device is kept.
    @Test func aRefusedServiceAccountIsAConfigurationErrorAndTheDeviceIsKept() async throws {
        try await Self.withGateway(strangerKey: true) { gateway, sandbox in
            let bob = Keys.generate()
            let android = Self.token("refused")
            #expect(try await gateway.send(bob, .post, "/v1/devices/register", json: Self.registerBody(android)).status == .accepted)
            let push = ArchiveAndPushTests.pushBody(event: "ev-refused", to: [bob])
            #expect(try await gateway.send(Keys.generate(), .post, "/v1/push", json: push).status == .accepted)
            #expect(try await GatewayHarness.eventually { try await gateway.count("SELECT count(*)::int FROM push_queue") == 0 })
            #expect(Self.deliveries(sandbox, to: android).isEmpty, "nothing was sent without a token")
            #expect(try await gateway.count("SELECT count(*)::int FROM devices WHERE platform = 'fcm'") == 1)
            let status = try await Self.adminStatus(gateway)
            #expect(status["configuration_errors"]?["fcm"]?["last_reason"] == "FCMTokenRefused", "\(status)")
            let stats = sandbox.state.fcm.answer(method: "GET", path: "/fcm/stats", query: [:], headers: [], body: [], authority: "")
            #expect(stats.json?["refused_exchanges"] == 1)
        }
    }

    /// The cache, against the sandbox's real token endpoint, on an injected clock: one exchange
    /// until 5 minutes before expiry, then one replacement behind the valid token; callers
    /// without a token share one exchange.
    @Test func theAccessTokenIsCachedUntilFiveMinutesBeforeItExpires() async throws {
        try await SandboxFixture.with { sandbox in
            let settings = try sandbox.fcm
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(sandbox.caFile)]
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
            // An hour behind: the assertions it signs stay valid at the sandbox's real clock as it moves.
            let clock = Mutex(Date().addingTimeInterval(-3600))
            let provider = FCMAccessTokenProvider(
                signer: try FCMAssertionSigner(account: try #require(settings.serviceAccount)), client: client,
                tokenURL: try #require(settings.effectiveTokenURL), logger: TestDatabase.logger, now: { clock.withLock { $0 } })
            do {
                let first = try await provider.token()
                #expect(first.expiresAt.timeIntervalSince(clock.withLock { $0 }) == 3600)
                clock.withLock { $0 = $0.addingTimeInterval(54 * 60) }
                #expect(try await provider.token() == first, "54 minutes on: still the same token")
                #expect(await provider.exchanges == 1)

                // 5 minutes before expiry: the caller still gets the valid token at once, and one
                // replacement starts behind it.
                clock.withLock { $0 = $0.addingTimeInterval(60 + 1) }
                #expect(try await provider.token() == first)
                #expect(try await GatewayHarness.eventually { try await provider.token() != first })
                #expect(await provider.exchanges == 2)
                #expect(sandbox.state.fcm.exchanges == 2)

                // Past expiry with nothing cached (FCM refused it): callers arriving together wait
                // for one exchange and share it.
                await provider.invalidate(try await provider.token())
                let callers = try await withThrowingTaskGroup(of: String.self) { group in
                    for _ in 0..<10 { group.addTask { try await provider.token().value } }
                    return try await group.reduce(into: Set<String>()) { $0.insert($1) }
                }
                #expect(callers.count == 1, "one token for all ten callers")
                #expect(await provider.exchanges == 3, "one exchange for all ten")
            } catch {
                try await client.shutdown()
                throw error
            }
            try await client.shutdown()
        }
    }
}
