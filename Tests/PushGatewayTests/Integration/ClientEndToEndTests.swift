import APNsSandbox
import Foundation
import HummingbirdTesting
import LinkstrCore
import NostrProtocol
import NostrRelay
import PushGateway
import TestSupport
import Testing

/// The whole system: two client cores (LinkstrCore) talking through a real `nostr-relay`, the
/// gateway on a real PostgreSQL delivering to the APNs sandbox over HTTP/2 with TLS.
@Suite(.serialized) struct ClientEndToEndTests {
    static func core(relay: RelayFixture, gateway: GatewayHarness, identity: Keys? = nil) async throws -> LinkstrAppCore {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("linkstr-e2e-\(UUID().uuidString)")
        var configuration = CoreConfiguration(dataDirectory: directory)
        configuration.defaultRelays = [relay.url]
        configuration.sendTimeout = .seconds(30)
        // Every relay here is on loopback, recipients' inbox relays included.
        configuration.allowPrivateRecipientRelays = true
        configuration.pushGateway = URL(string: "http://127.0.0.1:\(try #require(gateway.client.port))")
        let core = try LinkstrAppCore(configuration: configuration)
        if let identity {
            #expect(await core.perform(.importIdentity(identity.secretKey.exportHex())) == .done)
        } else {
            #expect(await core.perform(.createIdentity) == .done)
        }
        #expect(await core.perform(.startRelays) == .done)
        return core
    }

    /// NIP-17 end to end through the gateway's inbox relay. Bob's only inbox is the gateway
    /// (`push register --inbox`), and Bob's client never connects to Alice's relay: Alice's client
    /// finds Bob's kind 10050 list and sends his wrap there too, the gateway stores it and pushes
    /// Bob's device, and Bob's client reads the post from the inbox after NIP-42 AUTH.
    @Test func aPostReachesBobThroughTheGatewaysInboxRelayOnly() async throws {
        let alicesRelay = try RelayFixture(), bobsRelay = try RelayFixture()
        try await alicesRelay.start()
        try await bobsRelay.start()
        defer {
            alicesRelay.kill()
            bobsRelay.kill()
        }
        let port = try LoopbackPort.free()
        let inboxURL = try RelayURL("ws://127.0.0.1:\(port)/relay")
        let inbox = InboxRelaySettings(enabled: true, listenHost: "127.0.0.1", listenPort: port, relayURL: inboxURL)
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, publicURL: "http://127.0.0.1:\(port)", inbox: inbox) {
                gateway in
                #expect(
                    try await GatewayHarness.eventually { (try? RawHTTPClient.status(port: port, method: "GET", path: "/relay")) == 200 })
                let bobKeys = Keys.generate()
                let bob = try await Self.core(relay: bobsRelay, gateway: gateway, identity: bobKeys)
                let alice = try await Self.core(relay: alicesRelay, gateway: gateway)
                let bobToken = "b1" + String(repeating: "1b", count: 31)
                #expect(
                    await bob.perform(.registerPush(deviceToken: bobToken, environment: .sandbox, relayWatch: true, inbox: true)) == .done)
                #expect(await bob.state().relays.inbox == [inboxURL.description], "the gateway's inbox joined Bob's list")
                // Bob's list is on his own relay; senders look where they can, so it is on Alice's too.
                let list = InboxRelayList.event(author: bobKeys.publicKey, relays: [inboxURL]).signed(by: bobKeys)
                try await RelayWatchTests.publish([list], to: alicesRelay)

                guard case .navigate(let sessionID) = await alice.perform(.createSession(name: "Inbox", members: [bobKeys.publicKey.hex]))
                else {
                    Issue.record("no session")
                    return
                }
                guard case .posted(let postID) = await alice.perform(.post(sessionID: sessionID, url: "https://example.com/in", note: nil))
                else {
                    Issue.record("no post")
                    return
                }
                // A send returns once one relay accepted each wrap; the inbox's copy may still be on its way.
                #expect(
                    try await GatewayHarness.eventually { (try? await gateway.count("SELECT count(*)::int FROM inbox_wraps")) ?? 0 >= 1 },
                    "the wraps reached the inbox")
                #expect(
                    try await GatewayHarness.eventually {
                        RelayWatchTests.giftWrapDeliveries(sandbox).contains { $0.deviceToken == bobToken }
                    }, "Bob's device was pushed for the wrap the inbox took")
                #expect(
                    await eventually { await bob.state().sessions.rows.contains { $0.id == sessionID } },
                    "Bob read the post through the inbox")
                _ = postID
                // Unregistering takes the gateway's inbox back out of Bob's list, and with his last
                // device gone the inbox keeps nothing for him.
                #expect(await bob.perform(.unregisterPush) == .done)
                #expect(await bob.state().relays.inbox == [])
                #expect(try await gateway.count("SELECT count(*)::int FROM inbox_wraps WHERE recipient = '\(bobKeys.publicKey.hex)'") == 0)
                await bob.settle()
                await alice.settle()
            }
        }
    }

    /// Bob has a phone and a tablet, both registered with the gateway's inbox. The phone leaving
    /// keeps the inbox in his list (the tablet is still pushed through it); the tablet, the last
    /// device, takes it out, though it was the phone that put it in.
    @Test func theGatewaysInboxLeavesTheListWithTheLastDeviceOnly() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        let port = try LoopbackPort.free()
        let inboxURL = try RelayURL("ws://127.0.0.1:\(port)/relay")
        let inbox = InboxRelaySettings(enabled: true, listenHost: "127.0.0.1", listenPort: port, relayURL: inboxURL)
        try await GatewayHarness.run(publicURL: "http://127.0.0.1:\(port)", inbox: inbox) { gateway in
            #expect(try await GatewayHarness.eventually { (try? RawHTTPClient.status(port: port, method: "GET", path: "/relay")) == 200 })
            let bobKeys = Keys.generate()
            let phone = try await Self.core(relay: relay, gateway: gateway, identity: bobKeys)
            let tablet = try await Self.core(relay: relay, gateway: gateway, identity: bobKeys)
            let phoneToken = "c1" + String(repeating: "1c", count: 31), tabletToken = "c2" + String(repeating: "2c", count: 31)
            #expect(
                await phone.perform(.registerPush(deviceToken: phoneToken, environment: .sandbox, relayWatch: true, inbox: true)) == .done)
            #expect(await eventually { await tablet.state().relays.inbox == [inboxURL.description] }, "the tablet read the phone's list")
            #expect(
                await tablet.perform(.registerPush(deviceToken: tabletToken, environment: .sandbox, relayWatch: true, inbox: true)) == .done
            )

            #expect(await phone.perform(.unregisterPush) == .done)
            #expect(await phone.state().relays.inbox == [inboxURL.description], "the tablet is still registered")
            #expect(try await gateway.count("SELECT count(*)::int FROM devices WHERE pubkey = '\(bobKeys.publicKey.hex)'") == 1)

            #expect(await tablet.perform(.unregisterPush) == .done)
            #expect(await tablet.state().relays.inbox == [], "the last device took the inbox out")
            #expect(await eventually { await phone.state().relays.inbox == [] }, "the phone read the tablet's list")
            await phone.settle()
            await tablet.settle()
        }
    }

    /// `linkstr push register --inbox`, the CLI on the same library: the device is registered with
    /// relay watching, and the gateway's inbox relay joins the account's NIP-17 list on its relay;
    /// `push unregister` takes it out again.
    @Test func theCLIRegistersWithTheGatewaysInboxAndUnregisters() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        let port = try LoopbackPort.free()
        let inboxURL = try RelayURL("ws://127.0.0.1:\(port)/relay")
        let inbox = InboxRelaySettings(enabled: true, listenHost: "127.0.0.1", listenPort: port, relayURL: inboxURL)
        try await GatewayHarness.run(publicURL: "http://127.0.0.1:\(port)", inbox: inbox) { gateway in
            #expect(try await GatewayHarness.eventually { (try? RawHTTPClient.status(port: port, method: "GET", path: "/relay")) == 200 })
            let binary = try ChildProcess.builtProduct("linkstr")
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("linkstr-cli-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let pushURL = "http://127.0.0.1:\(try #require(gateway.client.port))"
            @Sendable func linkstr(_ arguments: String...) async throws -> String {
                let (code, output) = try await ChildProcess.run(binary, arguments + ["--data-dir", directory], timeout: .seconds(60))
                guard code == 0 else { throw TestSetupError("linkstr \(arguments.joined(separator: " ")) exited \(code): \(output)") }
                return output
            }
            let bob = Keys.generate()
            _ = try await linkstr("identity", "import", bob.secretKey.exportNsec())
            // The test relay alone (ours first: an empty list would be refilled with the defaults).
            _ = try await linkstr("relays", "add", relay.url)
            for url in ["wss://relay.damus.io", "wss://nos.lol", "wss://relay.primal.net"] {
                _ = try await linkstr("relays", "remove", url)
            }
            let token = "c3" + String(repeating: "3c", count: 31)
            _ = try await linkstr("push", "register", "--token", token, "--relay-watch", "--inbox", "--push-url", pushURL)

            let devices =
                "SELECT count(*)::int FROM devices WHERE pubkey = '\(bob.publicKey.hex)' AND device_token = '\(token)' AND relay_watch"
            #expect(try await gateway.count(devices) == 1, "registered, watching relays")
            let listed = try JSONValue(parsing: Array((try await linkstr("relays", "inbox", "list", "--json")).utf8))
            #expect(listed["inbox_relays"] == [.string(inboxURL.description)])
            let reader = RelayConnection(url: relay.url, configuration: RelayConfiguration(), logger: TestDatabase.logger)
            let items = try await reader.running {
                let filter = Filter(authors: [bob.publicKey], kinds: [EventKind.inboxRelays])
                return await InboxRelayTests.collect(reader.subscribe(id: "lists", filters: [filter])) { $0 == .endOfStoredEvents }
            }
            let lists = items.compactMap { item -> NostrEvent? in if case .event(let event) = item { event } else { nil } }
            #expect(lists.count == 1 && lists.first?.tags == [["relay", inboxURL.description]], "\(lists.map(\.tags))")

            _ = try await linkstr("push", "unregister", "--push-url", pushURL)
            #expect(try await gateway.count(devices) == 0)
            let after = try JSONValue(parsing: Array((try await linkstr("relays", "inbox", "list", "--json")).utf8))
            #expect(after["inbox_relays"] == [], "the last device took the inbox out")
        }
    }

    @Test func alicePostsBobsDeviceIsPushedAndAfterRemovalIsNot() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns) { gateway in
                let alice = try await Self.core(relay: relay, gateway: gateway)
                let bob = try await Self.core(relay: relay, gateway: gateway)
                let bobToken = "b0" + String(repeating: "0b", count: 31), aliceToken = "a0" + String(repeating: "0a", count: 31)
                #expect(await bob.perform(.registerPush(deviceToken: bobToken, environment: .sandbox, relayWatch: false)) == .done)
                #expect(await alice.perform(.registerPush(deviceToken: aliceToken, environment: .sandbox, relayWatch: false)) == .done)
                let bobKey = try #require(await bob.state().identity?.pubkey)

                guard case .navigate(let sessionID) = await alice.perform(.createSession(name: "Clips", members: [bobKey])) else {
                    Issue.record("no session")
                    return
                }
                guard case .posted(let postID) = await alice.perform(.post(sessionID: sessionID, url: "https://example.com/1", note: nil))
                else {
                    Issue.record("no post")
                    return
                }
                // Bob's device gets exactly the contract's new_post push; Alice's own device none.
                #expect(try await GatewayHarness.eventually { sandbox.delivered().count == 1 })
                let record = try #require(sandbox.delivered().first)
                #expect(record.deviceToken == bobToken && record.collapseID == postID)
                let payload = try JSONValue(parsing: record.payload)
                #expect(payload["type"] == "new_post" && payload["conversation_id"]?.stringValue == sessionID)

                // Bob syncs and sees it unread, opens it, reacts: Alice's device is pushed the reaction.
                #expect(await eventually { await bob.state().sessions.rows.first?.unreadCount == 1 })
                #expect(await bob.perform(.openPost(postID)) == .done)
                #expect(await bob.state().sessions.rows.first?.unreadCount == 0)
                #expect(await bob.perform(.toggleReaction(postID: postID, emoji: "🔥")) == .done)
                #expect(try await GatewayHarness.eventually { sandbox.delivered().contains { $0.deviceToken == aliceToken } })
                let reaction = try JSONValue(parsing: try #require(sandbox.delivered().first { $0.deviceToken == aliceToken }).payload)
                #expect(reaction["type"] == "new_emoji_reaction" && reaction["emoji"] == "🔥" && reaction["post_id"]?.stringValue == postID)
                #expect(await eventually { await alice.state().sessions.rows.first.map { _ in true } ?? false })
                // Taking the reaction back pushes nothing.
                #expect(await bob.perform(.toggleReaction(postID: postID, emoji: "🔥")) == .done)

                // Bob archives the session: the gateway skips him for it.
                #expect(await bob.perform(.setArchived(sessionID: sessionID, true)) == .done)
                _ = await alice.perform(.post(sessionID: sessionID, url: "https://example.com/2", note: nil))
                // Unarchived again, then removed by Alice: the next post neither reaches nor pushes him.
                #expect(await bob.perform(.setArchived(sessionID: sessionID, false)) == .done)
                #expect(await alice.perform(.setSessionMembers(sessionID: sessionID, members: [])) == .done)
                guard case .posted = await alice.perform(.post(sessionID: sessionID, url: "https://example.com/3", note: nil)) else {
                    Issue.record("no third post")
                    return
                }
                try await Task.sleep(for: .seconds(1))
                #expect(
                    sandbox.delivered().filter { $0.deviceToken == bobToken }.count == 1,
                    "only the first post pushed Bob: \(sandbox.delivered().map { ($0.deviceToken.prefix(2), $0.collapseID ?? "") })")
                #expect(sandbox.delivered().filter { $0.deviceToken == aliceToken }.count == 1, "only the active reaction pushed Alice")
                await bob.settle()
                #expect(await bob.perform(.openSession(sessionID)) == .done)
                let bobsPosts = await bob.state().feed?.posts.map(\.url)
                #expect(
                    Set(bobsPosts ?? []) == ["https://example.com/1", "https://example.com/2"],
                    "the post from while he was archived arrived, the one after removal did not")

                // Logging out unregisters the device with the account's key.
                #expect(await bob.perform(.logout(clearData: false)) == .done)
                #expect(try await gateway.count("SELECT count(*)::int FROM devices WHERE device_token = '\(bobToken)'") == 0)
                await alice.shutdown()
                await bob.shutdown()
            }
        }
    }
}

extension ClientEndToEndTests {
    /// With a relay-watch device, the core tells the gateway about its own copies before
    /// publishing, so the watcher never wakes the sender's own phone.
    @Test func ownCopiesAreSuppressedForRelayWatchDevices() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        try await GatewayHarness.run { gateway in
            let alice = try await Self.core(relay: relay, gateway: gateway)
            let alicesKey = try #require(await alice.state().identity?.pubkey)
            #expect(
                await alice.perform(
                    .registerPush(
                        deviceToken: "c0" + String(repeating: "0c", count: 31), environment: .sandbox,
                        relayWatch: true)) == .done)
            guard
                case .navigate(let sessionID) = await alice.perform(.createSession(name: "Solo", members: [Keys.generate().publicKey.hex])),
                case .posted(let postID) = await alice.perform(.post(sessionID: sessionID, url: "https://example.com", note: nil))
            else {
                Issue.record("no post")
                return
            }
            let suppressed = "SELECT count(*)::int FROM push_suppressions WHERE pubkey = '\(alicesKey)'"
            #expect(try await gateway.count(suppressed) == 1, "the post's own copy (a session create never pushes)")
            #expect(await alice.perform(.toggleReaction(postID: postID, emoji: "👍")) == .done)
            #expect(try await gateway.count(suppressed) == 2)
            #expect(await alice.perform(.toggleReaction(postID: postID, emoji: "👍")) == .done)
            #expect(try await gateway.count(suppressed) == 2, "a deactivation pushes nothing, so nothing to suppress")
            await alice.shutdown()
        }
    }
}
