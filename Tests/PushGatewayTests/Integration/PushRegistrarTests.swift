import APNsSandbox
import Foundation
import HummingbirdTesting
import LinkstrCore
import NostrProtocol
import PostgresNIO
import PushGateway
import Synchronization
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The client library's registrar against the real gateway (HTTP on loopback, real PostgreSQL).
@Suite struct PushRegistrarTests {
    static let token = "ab" + String(repeating: "cd", count: 31)

    static func registrar(_ gateway: GatewayHarness, keys: Keys, transport: any HTTPTransport = URLSessionTransport()) throws
        -> PushRegistrar
    {
        let port = try #require(gateway.client.port)
        return PushRegistrar(
            baseURL: URL(string: "http://127.0.0.1:\(port)")!, keys: keys, transport: transport, retryDelay: .milliseconds(10))
    }

    static func archived(_ gateway: GatewayHarness, _ pubkey: String) async throws -> [String] {
        var ids: [String] = []
        for try await id in try await gateway.database.query(
            "SELECT conversation_id FROM archived_conversations WHERE pubkey = \(pubkey) ORDER BY conversation_id",
            logger: TestDatabase.logger
        ).decode(String.self) { ids.append(id) }
        return ids
    }

    @Test func registersSyncsArchiveStatePushesAndUnregisters() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate(), bob = Keys.generate()
            let registrar = try Self.registrar(gateway, keys: alice)
            try await registrar.register(deviceToken: Self.token, environment: .sandbox, relayWatch: true)
            let devices = try await registrar.devices()
            #expect(devices.count == 1)
            #expect(devices.first?.objectValue?["relay_watch"] == .bool(true))
            #expect(devices.first?.objectValue?["apns_environment"]?.stringValue == "sandbox")

            // 450 known conversations, every third archived: three batches of at most 200.
            let known = (0..<450).map { String(format: "%032X", $0) }
            let archived = Set(known.enumerated().filter { $0.offset % 3 == 0 }.map(\.element))
            try await registrar.syncArchiveState(archived: archived, known: Set(known))
            #expect(try await Self.archived(gateway, alice.publicKey.hex) == archived.sorted())
            // Unarchiving one conversation changes only it.
            let first = archived.sorted()[0]
            try await registrar.syncArchiveState(archived: archived.subtracting([first]), known: [first])
            #expect(try await Self.archived(gateway, alice.publicKey.hex) == archived.subtracting([first]).sorted())

            // Bob registers; Alice's push reaches his device (and skips herself).
            let bobRegistrar = try Self.registrar(gateway, keys: bob)
            try await bobRegistrar.register(deviceToken: "ef" + String(repeating: "01", count: 31), environment: .production)
            let accepted = try await registrar.enqueuePush(
                .newPost, eventID: String(repeating: "e", count: 64), conversationID: "C1",
                recipients: [alice.publicKey.hex, bob.publicKey.hex])
            #expect(accepted == PushRegistrar.PushAccepted(recipientCount: 1, candidateDevices: 1))
            await #expect(throws: PushRegistrar.RegistrarError.invalidInput("a reaction push needs its emoji")) {
                _ = try await registrar.enqueuePush(.newEmojiReaction, eventID: "x", conversationID: "C1", recipients: [bob.publicKey.hex])
            }

            // Suppressions for our own copies, more than one request's worth.
            try await registrar.suppress(wrapIDs: (0..<600).map { String(format: "%064x", $0) })
            var suppressed = 0
            for try await count in try await gateway.database.query(
                "SELECT count(*)::int FROM push_suppressions WHERE pubkey = \(alice.publicKey.hex)", logger: TestDatabase.logger
            ).decode(Int.self) {
                suppressed = count
            }
            #expect(suppressed == 600)

            // A bad token is refused with the gateway's message and nothing is stored.
            await #expect(throws: PushRegistrar.RegistrarError.self) {
                try await registrar.register(deviceToken: "nothex", environment: .sandbox)
            }
            #expect(try await registrar.devices().count == 1)

            // Unregister: the device and, with it, the archive state are gone.
            try await registrar.unregister(deviceToken: Self.token)
            #expect(try await registrar.devices().isEmpty)
            #expect(try await Self.archived(gateway, alice.publicKey.hex).isEmpty)
        }
    }

    /// Fails the first attempt of the second archive batch before it reaches the gateway, like a
    /// dropped connection; every other request goes to the real gateway.
    final class FlakyTransport: HTTPTransport {
        let inner = URLSessionTransport()
        let requests = Mutex(0)
        let failOn: Int

        init(failOn: Int) { self.failOn = failOn }

        func send(_ request: URLRequest) async throws -> (status: Int, body: Data) {
            let number = requests.withLock {
                $0 += 1
                return $0
            }
            if number == failOn { throw URLError(.networkConnectionLost) }
            return try await inner.send(request)
        }
    }

    @Test func aFailedArchiveBatchIsRetriedWithoutLosingIDs() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate()
            let flaky = FlakyTransport(failOn: 3)
            let registrar = try Self.registrar(gateway, keys: alice, transport: flaky)
            try await registrar.register(deviceToken: Self.token, environment: .sandbox)
            let known = (0..<400).map { String(format: "%032X", $0) }
            try await registrar.syncArchiveState(archived: Set(known), known: Set(known))
            #expect(try await Self.archived(gateway, alice.publicKey.hex) == known, "the second batch was sent again")
            #expect(flaky.requests.withLock { $0 } == 4, "register, batch 1, batch 2 failed, batch 2 again")
        }
    }

    @Test func anUnreachableGatewayIsAClearError() async throws {
        let port = try LoopbackPort.free()
        let registrar = PushRegistrar(
            baseURL: URL(string: "http://127.0.0.1:\(port)")!, keys: Keys.generate(), retryDelay: .milliseconds(1))
        await #expect {
            try await registrar.register(deviceToken: Self.token, environment: .sandbox)
        } throws: { error in
            guard case PushRegistrar.RegistrarError.unreachable? = error as? PushRegistrar.RegistrarError else { return false }
            return true
        }
    }
}

/// The registrar's other platforms against a gateway that delivers Web Push and FCM to the sandbox.
@Suite struct PushRegistrarPlatformTests {
    @Test func everyPlatformIsRegisteredListedAndUnregistered() async throws {
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(
                apns: sandbox.apns,
                webPush: WebPushSettings(subject: "mailto:ops@example.com", caFile: sandbox.caFile, allowPrivateEndpoints: true),
                fcm: try sandbox.fcm
            ) { gateway in
                let alice = Keys.generate()
                let registrar = try PushRegistrarTests.registrar(gateway, keys: alice)
                let subscription = try WebPushDeliveryTests.subscribe(sandbox)
                let browser = PushDevice.webPush(
                    endpoint: try #require(subscription["endpoint"]?.stringValue),
                    p256dh: try #require(subscription["keys"]?["p256dh"]?.stringValue),
                    auth: try #require(subscription["keys"]?["auth"]?.stringValue))
                let distributor = PushDevice.unifiedPush(endpoint: "https://localhost:\(sandbox.server.port)/up/1", keys: nil)
                let voip = PushDevice.apns(token: "0b" + String(repeating: "0c", count: 31), environment: .sandbox, voip: true)
                let android = PushDevice.fcm(token: FCMDeliveryTests.token("registrar"))
                for device in [browser, distributor, voip, android] { try await registrar.register(device) }
                let listed = try await registrar.devices()
                #expect(Set(listed.compactMap { $0["platform"]?.stringValue }) == ["webpush", "unifiedpush", "apns", "fcm"])
                #expect(listed.contains { $0["push_type"] == "voip" })
                #expect(try await registrar.vapidPublicKey()?.isEmpty == false)
                for device in [browser, distributor, voip, android] { try await registrar.unregister(device) }
                #expect(try await registrar.devices().isEmpty)
            }
        }
    }

    @Test func aGatewayWithoutWebPushOrFCMHasNoVAPIDKeyAndRefusesAnAndroidToken() async throws {
        try await GatewayHarness.run { gateway in
            let registrar = try PushRegistrarTests.registrar(gateway, keys: Keys.generate())
            let key = try await registrar.vapidPublicKey()
            #expect(key == nil)
            // FCM has no transport here: refused with the gateway's message, nothing stored.
            await #expect(
                throws: PushRegistrar.RegistrarError.rejected(status: 400, message: "platform fcm is not enabled on this gateway")
            ) {
                try await registrar.register(.fcm(token: String(repeating: "f", count: 40)))
            }
            #expect(try await registrar.devices().isEmpty)
        }
    }
}
