import APNsSandbox
import Foundation
import GatewayWire
import HTTPTypes
import HummingbirdTesting
import NIOHPACK
import NostrProtocol
import PostgresNIO
import PushGateway
import Synchronization
import Testing

/// The gateway delivering to the APNs sandbox over HTTP/2 with TLS, against a real PostgreSQL.
@Suite(.serialized) struct HTTP2DeliveryTests {
    /// Both transports (`APNS_TRANSPORT`) meet the same contract.
    static let transports: [APNsTransportKind] = [.nio, .asyncHTTPClient]

    static func register(_ gateway: GatewayHarness, _ keys: Keys, _ token: String, environment: String = "sandbox") async throws {
        let response = try await gateway.send(
            keys, .post, "/v1/devices/register", json: GatewayHarness.registerBody(token, environment: environment))
        #expect(response.status == .accepted)
    }

    static func token(prefix: String = "", _ seed: UInt8) -> String {
        let hex = Hex.encode([UInt8](repeating: seed, count: 32))
        return prefix + hex.dropFirst(prefix.count)
    }

    @Test(arguments: Self.transports) func aPushArrivesExactlyAsTheAppExpectsIt(transport: APNsTransportKind) async throws {
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns(transport)) { gateway in
                let alice = Keys.generate(), bob = Keys.generate()
                let token = Self.token(0xA1)
                try await Self.register(gateway, bob, token)
                let body = ArchiveAndPushTests.pushBody(
                    "new_emoji_reaction", event: "evt-1", conversation: "conv-9", to: [bob],
                    extra: #","emoji":"🔥","post_id":"post-3""#)
                #expect(try await gateway.send(alice, .post, "/v1/push", json: body).status == .accepted)
                #expect(try await GatewayHarness.eventually { sandbox.delivered().count == 1 })
                let record = try #require(sandbox.delivered().first)
                #expect(record.deviceToken == token)
                #expect(record.topic == SandboxFixture.topic)
                #expect(record.pushType == "alert")
                #expect(record.priority == "10")
                #expect(record.collapseID == "evt-1")
                let apnsID = try #require(record.apnsID)
                #expect(UUID(uuidString: apnsID) != nil && apnsID == apnsID.lowercased())
                // apns-expiration is the job's expiry: about 15 minutes from now.
                let expiration = try #require(record.expiration.flatMap { Int64($0) })
                #expect(abs(expiration - (UnixTime.now() + 900)) <= 5)
                let payload = try JSONValue(parsing: record.payload)
                #expect(
                    payload == [
                        "aps": [
                            "alert": ["title": "New reaction 🔥 in linkstr", "body": "Open linkstr to view"], "sound": "default",
                            "thread-id": "conv-9",
                        ],
                        "type": "new_emoji_reaction", "event_id": "evt-1", "conversation_id": "conv-9", "emoji": "🔥", "post_id": "post-3",
                    ])
                #expect(try await GatewayHarness.eventually { try await gateway.count("SELECT count(*)::int FROM push_queue") == 0 })
            }
        }
    }

    @Test(arguments: Self.transports) func permanentErrorsRemoveDevicesAndA410ObeysItsTimestamp(transport: APNsTransportKind) async throws {
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns(transport)) { gateway in
                let alice = Keys.generate()
                let bad = Keys.generate(), gone = Keys.generate(), reRegistered = Keys.generate(), fine = Keys.generate()
                let tokens = [
                    Self.token(prefix: "0400", 0xB1), Self.token(prefix: "0410", 0xB2), Self.token(prefix: "0411", 0xB3), Self.token(0xB4),
                ]
                for (keys, token) in zip([bad, gone, reRegistered, fine], tokens) { try await Self.register(gateway, keys, token) }
                let body = ArchiveAndPushTests.pushBody(to: [bad, gone, reRegistered, fine])
                #expect(try await gateway.send(alice, .post, "/v1/push", json: body).json?["candidate_devices"] == 4)
                #expect(try await GatewayHarness.eventually { try await gateway.count("SELECT count(*)::int FROM push_queue") == 0 })
                var remaining: [String] = []
                for try await token in try await gateway.database.query(
                    "SELECT device_token FROM devices ORDER BY device_token", logger: TestDatabase.logger
                )
                .decode(String.self) { remaining.append(token) }
                // 0400 BadDeviceToken and 0410 (timestamp now) remove the device; 0411's timestamp is an
                // hour before the registration, so the registration wins.
                #expect(remaining == [tokens[2], tokens[3]])
                #expect(sandbox.delivered().map(\.deviceToken) == [tokens[3]])

                let status = try await gateway.client.execute(
                    uri: "/admin/status", method: .get, headers: [.authorization: "Bearer admin-secret"])
                let failures = try #require(
                    status.json?["recent_push_failures"].flatMap { if case .array(let list) = $0 { list } else { nil } })
                #expect(Set(failures.compactMap { $0["reason"]?.stringValue }) == ["BadDeviceToken", "Unregistered"])
                #expect(failures.allSatisfy { $0["device_token"]?.stringValue?.hasPrefix("…") == true }, "tokens redacted")
            }
        }
    }

    @Test func aConfigurationErrorDropsTheJobAndKeepsTheDevice() async throws {
        try await SandboxFixture.with { sandbox in
            // The gateway signs for a topic the sandbox does not allow: APNs answers 400
            // TopicDisallowed, the operator's mistake, not the device's.
            var apns = sandbox.apns
            apns.apps.append(
                APNsApp(
                    topic: "app.linkstr.unknown", keyID: SandboxFixture.keyID, teamID: SandboxFixture.teamID, privateKeyPEM: sandbox.keyPEM)
            )
            try await GatewayHarness.run(deliver: true, apns: apns) { gateway in
                let alice = Keys.generate(), bob = Keys.generate()
                let token = Self.token(0xD1)
                let registration = GatewayHarness.registerBody(token, extra: #","topic":"app.linkstr.unknown""#)
                #expect(try await gateway.send(bob, .post, "/v1/devices/register", json: registration).status == .accepted)
                #expect(
                    try await gateway.send(alice, .post, "/v1/push", json: ArchiveAndPushTests.pushBody(to: [bob])).json?[
                        "candidate_devices"] == 1)
                #expect(
                    try await GatewayHarness.eventually { try await gateway.count("SELECT count(*)::int FROM push_queue") == 0 },
                    "the job is dropped, not retried")
                #expect(sandbox.state.records().map(\.status) == [400])
                #expect(
                    try await gateway.count("SELECT count(*)::int FROM devices WHERE device_token = '\(token)'") == 1, "the device is kept")
                let metrics = String(decoding: await gateway.metrics.exposition(), as: UTF8.self)
                #expect(metrics.contains(#"linkstr_pushes_total{outcome="configuration_error",reason="TopicDisallowed"} 1"#))
                let status = try await gateway.client.execute(
                    uri: "/admin/status", method: .get, headers: [.authorization: "Bearer admin-secret"])
                let failures = try #require(
                    status.json?["recent_push_failures"].flatMap { if case .array(let list) = $0 { list } else { nil } })
                #expect(failures.map { $0["outcome"]?.stringValue } == ["configuration_error"])
                #expect(failures.map { $0["reason"]?.stringValue } == ["TopicDisallowed"])
            }
        }
    }

    @Test(arguments: Self.transports) func onlyTheFailedDeviceIsRetriedWithTheSameAPNsID(transport: APNsTransportKind) async throws {
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns(transport)) { gateway in
                let alice = Keys.generate(), flaky = Keys.generate(), throttled = Keys.generate(), fine = Keys.generate()
                let tokens = [Self.token(prefix: "05001", 0xC1), Self.token(prefix: "04291", 0xC2), Self.token(0xC3)]
                for (keys, token) in zip([flaky, throttled, fine], tokens) { try await Self.register(gateway, keys, token) }
                #expect(
                    try await gateway.send(alice, .post, "/v1/push", json: ArchiveAndPushTests.pushBody(to: [flaky, throttled, fine]))
                        .status == .accepted)
                // One 500 and one 429, then success after the 2 s (+ jitter) backoff.
                #expect(try await GatewayHarness.eventually(within: 15) { sandbox.delivered().count == 3 })
                let all = sandbox.state.records()
                #expect(all.count == 5)
                for token in tokens {
                    let attempts = all.filter { $0.deviceToken == token }
                    #expect(Set(attempts.compactMap(\.apnsID)).count == 1, "one apns-id across retries")
                }
                #expect(all.filter { $0.deviceToken == tokens[2] }.count == 1, "the healthy device is sent once")
                #expect(all.filter { $0.deviceToken == tokens[0] }.map(\.status) == [500, 200])
                #expect(all.filter { $0.deviceToken == tokens[1] }.map(\.status) == [429, 200])
            }
        }
    }

    @Test(arguments: Self.transports) func concurrencyNeverExceedsTheAdvertisedStreamLimit(transport: APNsTransportKind) async throws {
        try await SandboxFixture.with(maxConcurrentStreams: 3, latencyMilliseconds: 40) { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns(transport)) { gateway in
                let alice = Keys.generate()
                let recipients = (0..<30).map { _ in Keys.generate() }
                for (index, keys) in recipients.enumerated() { try await Self.register(gateway, keys, Self.token(UInt8(0x10 + index))) }
                #expect(
                    try await gateway.send(alice, .post, "/v1/push", json: ArchiveAndPushTests.pushBody(to: recipients)).status == .accepted
                )
                #expect(try await GatewayHarness.eventually(within: 20) { sandbox.delivered().count == 30 })
                let statistics = sandbox.state.statistics
                #expect(statistics.byStatus == [200: 30], "no stream was refused")
                #expect(statistics.peakConcurrentStreams <= 3)
                #expect(statistics.peakConcurrentStreams >= 2, "streams are multiplexed, not sent one by one")
            }
        }
    }

    /// Per-request header values stay out of the HPACK dynamic table; repeated ones go in. A
    /// relay-watch alert's collapse id (its recipient) is per request, a typed push's (its event,
    /// shared by every device of the request) is not.
    @Test func onlyRepeatedHeaderValuesEnterTheHPACKTable() async throws {
        try await SandboxFixture.with { sandbox in
            let sender = try HTTP2APNsSender(configuration: sandbox.apns, logger: TestDatabase.logger)
            func indexing(_ notification: APNsNotification) -> [String: HPACKIndexing] {
                let job = ClaimedJob(
                    id: 1, apnsID: UUID(), deviceToken: Self.token(prefix: "0405", 0xD2), pubkey: "p", environment: .sandbox,
                    topic: SandboxFixture.topic, deviceUpdatedAt: Date(), notification: notification, attempts: 1,
                    expiresAt: Date().addingTimeInterval(900))
                let headers = HTTP2ConnectionPool.headers(
                    sender.request(job, payload: "{}", authorization: HTTP2APNsSender.authorization("token")))
                return Dictionary(headers.map { ($0.name, $0.indexable) }, uniquingKeysWith: { first, _ in first })
            }
            let watch = indexing(
                .giftWrap(
                    wrapID: String(repeating: "a", count: 64), relay: "wss://r", count: 1, recipient: String(repeating: "b", count: 64)))
            #expect(watch[":path"] == .nonIndexable && watch["apns-id"] == .nonIndexable && watch["apns-collapse-id"] == .nonIndexable)
            #expect(watch["authorization"] == .indexable && watch["apns-topic"] == .indexable)
            let typed = indexing(APNsNotification(type: .newPost, eventID: "e", conversationID: "c"))
            #expect(typed["apns-id"] == .nonIndexable && typed["apns-collapse-id"] == .indexable && typed["authorization"] == .indexable)
        }
    }

    /// A round's requests share their payload and headers only with the requests of the same
    /// notification, topic and expiry (`HTTP2APNsSender.RequestShape`): in a round that mixes
    /// typed pushes, a relay-watch alert and a call, every device gets its own notification.
    @Test func eachRequestOfAMixedRoundCarriesItsOwnNotification() async throws {
        try await SandboxFixture.with { sandbox in
            let sender = try HTTP2APNsSender(configuration: sandbox.apns, logger: TestDatabase.logger)
            let later = Date().addingTimeInterval(900), sooner = Date().addingTimeInterval(600)
            let post = APNsNotification(type: .newPost, eventID: "ev1", conversationID: "C1")
            let other = APNsNotification(type: .newPost, eventID: "ev2", conversationID: "C1")
            let call = APNsNotification(type: .incomingCall, eventID: "ev3", conversationID: "C1")
            let wrap = APNsNotification.giftWrap(wrapID: String(repeating: "a", count: 64), relay: "wss://r", count: 2, recipient: "p")
            let plan: [(APNsNotification, Date, APNsTokenKind)] = [
                (post, later, .alert), (post, later, .alert), (post, sooner, .alert), (other, sooner, .alert), (wrap, later, .alert),
                (call, later, .voip), (call, later, .voip), (post, later, .alert),
            ]
            let jobs = plan.enumerated().map { index, entry in
                ClaimedJob(
                    id: Int64(index + 1), apnsID: UUID(),
                    destination: .apns(token: Self.token(prefix: "0505", UInt8(0xE0 + index)), environment: .sandbox, kind: entry.2),
                    pubkey: "p", topic: SandboxFixture.topic, deviceUpdatedAt: Date(), notification: entry.0, attempts: 1,
                    expiresAt: entry.1)
            }
            let results = await sender.send(jobs)
            #expect(results.allSatisfy { $0.outcome == .delivered }, "\(results)")
            let records = Dictionary(sandbox.delivered().map { ($0.deviceToken, $0) }, uniquingKeysWith: { first, _ in first })
            #expect(records.count == jobs.count)
            for job in jobs {
                let record = try #require(records[job.deviceToken])
                #expect(record.apnsID == job.apnsID.uuidString.lowercased())
                #expect(record.payload == HTTP2APNsSender.payload(of: job), "\(job.notification.eventID)")
                if case .apns(_, _, .voip) = job.destination {
                    #expect(record.pushType == "voip" && record.collapseID == nil)
                    let ringing = Int64(Date().timeIntervalSince1970) + APNsNotification.voipLifetimeSeconds
                    #expect(try #require(record.expiration.flatMap { Int64($0) }) <= ringing, "a call expires within 30 s")
                } else {
                    #expect(record.expiration == String(Int64(job.expiresAt.timeIntervalSince1970)))
                    #expect(record.collapseID == job.notification.collapseID)
                }
            }
        }
    }

    @Test func anExpiredProviderTokenIsRefreshedAndTheSendRetried() async throws {
        try await SandboxFixture.with { sandbox in
            // The sender's clock starts 21 minutes in the past, so its first token is old enough to
            // be replaced when APNs calls it expired.
            let clock = TestClock(Date().addingTimeInterval(-21 * 60))
            let sender = try HTTP2APNsSender(configuration: sandbox.apns, logger: TestDatabase.logger, now: { clock.now })
            let job = ClaimedJob(
                id: 1, apnsID: UUID(), deviceToken: Self.token(prefix: "0403", 0xD1), pubkey: "", environment: .sandbox,
                topic: SandboxFixture.topic, deviceUpdatedAt: Date(),
                notification: APNsNotification(type: .newPost, eventID: "e", conversationID: "c"),
                attempts: 1, expiresAt: Date().addingTimeInterval(900))
            let first = await sender.send(Self.warmUp(job))
            #expect(first.status == 200)
            clock.now = Date()
            let result = await sender.send(job)
            #expect(result.status == 200, "refreshed and retried at once")
            let attempts = sandbox.state.records().filter { $0.deviceToken == job.deviceToken }
            #expect(attempts.map(\.status) == [403, 200])
            #expect(Set(attempts.compactMap(\.apnsID)).count == 1)

            // A token younger than 20 minutes is not replaced: the 403 goes back to the worker.
            let young = try HTTP2APNsSender(configuration: sandbox.apns, logger: TestDatabase.logger)
            var again = job
            again.destination = .apns(token: Self.token(prefix: "0403", 0xD2), environment: .sandbox, kind: .alert)
            let refused = await young.send(again)
            #expect(refused.status == 403 && refused.reason == "ExpiredProviderToken")
            #expect(
                APNsResponseClassifier.classify(status: refused.status, reason: refused.reason)
                    == .refreshTokenAndRetry(reason: "ExpiredProviderToken"))
            await sender.shutdown()
            await young.shutdown()
        }
    }

    /// The same job to a healthy token, so the sender's connection and token exist first.
    static func warmUp(_ job: ClaimedJob) -> ClaimedJob {
        var warm = job
        warm.destination = .apns(token: token(0xD0), environment: .sandbox, kind: .alert)
        warm.apnsID = UUID()
        return warm
    }

    /// A round whose bodies add up to many times the connection's 64 KB send window, to a server
    /// that hands the window back in 16 KB steps: each request waits for room for its whole body,
    /// so none is split across window updates and sent after later ones. The sandbox answers a
    /// request when its last DATA frame arrives, so its records come in the order sent.
    @Test func aRoundLargerThanTheConnectionWindowArrivesWholeAndInOrder() async throws {
        try await SandboxFixture.with { sandbox in
            // About 3 KB each (the thread id and the conversation id), 600 of them: 1.9 MB.
            let notification = APNsNotification(type: .newPost, eventID: "e", conversationID: String(repeating: "c", count: 1_500))
            #expect(notification.payload.utf8.count > 3_000)
            try await Self.expectAnsweredInOrder(Self.round(600, of: notification, prefix: "0406"), by: sandbox)
        }
    }

    /// A round of many more requests than the server's `SETTINGS_MAX_CONCURRENT_STREAMS`: they wait
    /// here for a free stream, in order, never more open than the limit, so the streams that free
    /// up in one read do not release a burst of DATA frames in no set order.
    @Test func aRoundAboveTheStreamLimitKeepsItsOrderAndTheLimit() async throws {
        try await SandboxFixture.with(maxConcurrentStreams: 8) { sandbox in
            let notification = APNsNotification(type: .newPost, eventID: "e", conversationID: "c")
            try await Self.expectAnsweredInOrder(Self.round(400, of: notification, prefix: "0407"), by: sandbox)
            #expect(sandbox.state.statistics.peakConcurrentStreams <= 8)
        }
    }

    /// `count` jobs of one notification, for tokens starting with `prefix`.
    static func round(_ count: Int, of notification: APNsNotification, prefix: String) -> [ClaimedJob] {
        (0..<count).map { index in
            ClaimedJob(
                id: Int64(index), apnsID: UUID(), deviceToken: token(prefix: prefix, UInt8(index % 200)), pubkey: "",
                environment: .sandbox, topic: SandboxFixture.topic, deviceUpdatedAt: Date(), notification: notification,
                attempts: 1, expiresAt: Date().addingTimeInterval(900))
        }
    }

    /// Sends `jobs` as one round on one connection and expects every one answered 200, in the order
    /// sent (the sandbox's records are numbered as it answers).
    static func expectAnsweredInOrder(_ jobs: [ClaimedJob], by sandbox: SandboxFixture) async throws {
        var configuration = sandbox.apns(.nio)
        configuration.connections = 1
        let sender = try HTTP2APNsSender(configuration: configuration, logger: TestDatabase.logger)
        let results = await sender.send(jobs)
        #expect(results.map(\.status) == Array(repeating: 200, count: jobs.count))
        let received = sandbox.state.records().sorted { $0.sequence < $1.sequence }.compactMap(\.apnsID)
        let sent = jobs.map { $0.apnsID.uuidString.lowercased() }
        #expect(received.count == sent.count)
        #expect(zip(received, sent).filter { $0 != $1 }.count == 0, "requests answered out of the order sent")
        await sender.shutdown()
    }

    /// Error answers carry JSON bodies; more than the 64 KB connection window of them must not
    /// stall the connection. The frame transport hands the window back itself (AsyncHTTPClient's
    /// stream multiplexer does it for the other transport).
    @Test func aConnectionKeepsAnsweringPastAWindowOfErrorBodies() async throws {
        try await SandboxFixture.with { sandbox in
            var configuration = sandbox.apns(.nio)
            configuration.connections = 1
            let sender = try HTTP2APNsSender(configuration: configuration, logger: TestDatabase.logger)
            let jobs = (0..<2_600).map { index in
                ClaimedJob(
                    id: Int64(index), apnsID: UUID(), deviceToken: Self.token(prefix: "0400", UInt8(index % 200)), pubkey: "",
                    environment: .sandbox,
                    topic: SandboxFixture.topic, deviceUpdatedAt: Date(),
                    notification: APNsNotification(type: .newPost, eventID: "e", conversationID: "c"),
                    attempts: 1, expiresAt: Date().addingTimeInterval(900))
            }
            // In rounds of 100, like the delivery loops' batches.
            var statuses: [Int: Int] = [:]
            for start in stride(from: 0, to: jobs.count, by: 100) {
                let round = jobs[start..<min(jobs.count, start + 100)]
                let answered = await withTaskGroup(of: Int.self) { group in
                    for job in round { group.addTask { await sender.send(job).status } }
                    var statuses: [Int] = []
                    for await status in group { statuses.append(status) }
                    return statuses
                }
                for status in answered { statuses[status, default: 0] += 1 }
            }
            #expect(statuses == [400: 2_600], "every request answered: \(statuses)")
            let bodyBytes = sandbox.state.records().count * #"{"reason":"BadDeviceToken"}"#.utf8.count
            #expect(bodyBytes > 65_535, "more than one connection window of answers")
            var healthy = jobs[0]
            healthy.destination = .apns(token: Self.token(0xEE), environment: .sandbox, kind: .alert)
            #expect(await sender.send(healthy).status == 200)
            await sender.shutdown()
        }
    }

    @Test func productionDevicesUseTheProductionHost() async throws {
        try await SandboxFixture.with { development in
            try await SandboxFixture.with(keyPEM: development.keyPEM) { production in
                // Each sandbox has its own CA: trust both through one bundle file.
                let bundle = FileManager.default.temporaryDirectory.appendingPathComponent("ca-bundle-\(UUID().uuidString).pem").path
                let text =
                    try String(contentsOfFile: production.caFile, encoding: .utf8)
                    + String(contentsOfFile: development.caFile, encoding: .utf8)
                try text.write(toFile: bundle, atomically: true, encoding: .utf8)
                defer { try? FileManager.default.removeItem(atPath: bundle) }
                var apns = development.apns
                apns.productionURL = production.url
                apns.caFile = bundle
                try await GatewayHarness.run(deliver: true, apns: apns) { gateway in
                    let alice = Keys.generate(), bob = Keys.generate(), carol = Keys.generate()
                    try await Self.register(gateway, bob, Self.token(0xE1), environment: "production")
                    try await Self.register(gateway, carol, Self.token(0xE2), environment: "sandbox")
                    #expect(
                        try await gateway.send(alice, .post, "/v1/push", json: ArchiveAndPushTests.pushBody(to: [bob, carol])).status
                            == .accepted)
                    #expect(try await GatewayHarness.eventually { development.delivered().count == 1 && production.delivered().count == 1 })
                    #expect(development.delivered().map(\.deviceToken) == [Self.token(0xE2)])
                    #expect(production.delivered().map(\.deviceToken) == [Self.token(0xE1)])
                }
            }
        }
    }
}

/// A settable clock for code that takes `now: () -> Date`.
final class TestClock: Sendable {
    private let value: Mutex<Date>
    init(_ start: Date) { value = Mutex(start) }
    var now: Date {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
