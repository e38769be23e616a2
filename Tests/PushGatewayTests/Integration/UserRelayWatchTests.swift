import APNsSandbox
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NostrProtocol
import NostrRelay
import PushGateway
import TestSupport
import Testing

/// The watcher on users' own relays: the relays a registration names, the NIP-17 kind 10050
/// list found on the indexer relays, and what `GET /v1/devices` says of each. `RELAYS` and the
/// indexer are a real relay (`nostr-relay`); users' relays are `HostileRelay`s, which record
/// every connection the gateway opens.
@Suite(.serialized) struct UserRelayWatchTests {
    static func settings(_ relay: RelayFixture, allowPrivate: Bool = true) -> WatchSettings {
        WatchSettings(
            relays: [relay.url], chunkSize: 500, coalesceSeconds: 0, shards: 8, leaseSeconds: 30, resubscribeSeconds: 0,
            allowPrivateRelays: allowPrivate)
    }

    static func register(_ gateway: GatewayHarness, _ keys: Keys, _ token: String, relays: [String]) async throws {
        let list = relays.map { #""\#($0)""# }.joined(separator: ",")
        let response = try await gateway.send(
            keys, .post, "/v1/devices/register",
            json: GatewayHarness.registerBody(token, extra: #","relay_watch":true,"relays":[\#(list)]"#))
        #expect(response.status == .accepted, "\(response.errorMessage ?? "")")
    }

    /// The `watch` object `GET /v1/devices` shows for `keys`' first device.
    static func watch(_ gateway: GatewayHarness, _ keys: Keys) async throws -> JSONValue? {
        let response = try await gateway.send(keys, .get, "/v1/devices")
        return response.json?["devices"]?.arrayValue?.first?["watch"]
    }

    static func state(_ watch: JSONValue?, of url: String) -> String? {
        watch?["relays"]?.arrayValue?.first { $0["url"]?.stringValue == url }?["state"]?.stringValue
    }

    /// Whether `pubkey`'s subscription on `relay` has reached EOSE (the live mark the watcher writes).
    static func isLive(_ gateway: GatewayHarness, _ keys: Keys, on relay: String) async throws -> Bool {
        try await gateway.count(
            "SELECT count(*)::int FROM watch_live WHERE pubkey = '\(keys.publicKey.hex)' AND relay = '\(relay)'") == 1
    }

    /// `keys`' kind 10050 list naming `relays`, published to `relay`.
    static func publishInboxList(_ keys: Keys, _ relays: [String], to relay: RelayFixture, createdAt: Int64 = UnixTime.now()) async throws {
        let urls = try relays.map { try RelayURL($0) }
        let event = InboxRelayList.event(author: keys.publicKey, relays: urls, createdAt: createdAt).signed(by: keys)
        try await RelayWatchTests.publish([event], to: relay)
    }

    @Test func aWrapOnARelayTheRegistrationNamedIsPushed() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        let inbox = try HostileRelay()
        try await inbox.start()
        defer { Task { await inbox.stop() } }
        let bob = Keys.generate()
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, watch: Self.settings(relay)) { gateway in
                try await Self.register(gateway, bob, HTTP2DeliveryTests.token(0xB1), relays: [inbox.url])
                #expect(try await GatewayHarness.eventually { try await Self.isLive(gateway, bob, on: inbox.url) }, "watched on the inbox")
                let watch = try await Self.watch(gateway, bob)
                #expect(watch?["source"] == "registration")
                #expect(Self.state(watch, of: inbox.url) == "watching", "\(String(describing: watch))")

                // Published only there, never on RELAYS.
                inbox.publish(try RelayWatchTests.wrap(to: bob))
                #expect(try await GatewayHarness.eventually { RelayWatchTests.giftWrapDeliveries(sandbox).count == 1 })
                let status = try await RelayWatchTests.watchStatus(gateway)
                #expect(status?["user_relays"]?["watching"] == 1)
                #expect(status?["users_with_own_relays"] == 1)
            }
        }
    }

    @Test func aNewInboxListMovesTheWatchWithinSeconds() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        let first = try HostileRelay(), second = try HostileRelay()
        try await first.start()
        try await second.start()
        defer {
            Task {
                await first.stop()
                await second.stop()
            }
        }
        let bob = Keys.generate()
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, watch: Self.settings(relay)) { gateway in
                try await Self.register(gateway, bob, HTTP2DeliveryTests.token(0xB2), relays: [first.url])
                #expect(try await GatewayHarness.eventually { try await Self.isLive(gateway, bob, on: first.url) })

                // Bob's list names the second relay only; it wins over what the device registered.
                let published = ContinuousClock.now
                try await Self.publishInboxList(bob, [second.url], to: relay)
                #expect(try await GatewayHarness.eventually { try await Self.isLive(gateway, bob, on: second.url) }, "moved")
                let moved = ContinuousClock.now - published
                // The list arrives on a live subscription; a watcher that only found it on its
                // periodic re-read of the watched set (once a minute) would take longer than this.
                #expect(moved < .seconds(20), "the list took \(moved) to move the watch")
                let watch = try await Self.watch(gateway, bob)
                #expect(watch?["source"] == "10050")
                #expect(watch?["relays"]?.arrayValue?.compactMap { $0["url"]?.stringValue } == [second.url])
                #expect(try await gateway.count("SELECT count(*)::int FROM inbox_relay_lists") == 1)

                // Nobody lists the first relay any more: its connection is closed and its live
                // mark forgotten.
                // Closing waits for the WebSocket close handshake: generous on a loaded machine.
                #expect(
                    try await GatewayHarness.eventually(within: 30) { first.records.allSatisfy { $0.closed != nil } },
                    "the first relay's connection closed")
                #expect(
                    try await GatewayHarness.eventually { try await Self.isLive(gateway, bob, on: first.url) == false },
                    "the first relay's live mark forgotten")
                first.publish(try RelayWatchTests.wrap(to: bob, "on the old relay"))
                second.publish(try RelayWatchTests.wrap(to: bob, "on the new relay"))
                #expect(try await GatewayHarness.eventually { RelayWatchTests.giftWrapDeliveries(sandbox).count == 1 })
                // The first relay's wrap had no connection to arrive by.
                try await Task.sleep(for: .seconds(1))
                #expect(RelayWatchTests.giftWrapDeliveries(sandbox).count == 1)

                // An older list is not applied over the newer one.
                try await Self.publishInboxList(bob, [first.url], to: relay, createdAt: UnixTime.now() - 3600)
                try await Task.sleep(for: .seconds(1))
                #expect(try await Self.watch(gateway, bob)?["relays"]?.arrayValue?.compactMap { $0["url"]?.stringValue } == [second.url])
            }
        }
    }

    @Test func aRelayServingOnlyRecipientsIsReportedAsRequiringAuth() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        let inbox = try HostileRelay(servesOnlyRecipients: true)
        try await inbox.start()
        defer { Task { await inbox.stop() } }
        let bob = Keys.generate()
        try await GatewayHarness.run(watch: Self.settings(relay)) { gateway in
            try await Self.register(gateway, bob, HTTP2DeliveryTests.token(0xB3), relays: [inbox.url])
            // The gateway AUTHs with its own key; the inbox still serves bob's wraps only to bob.
            #expect(
                try await GatewayHarness.eventually { Self.state(try await Self.watch(gateway, bob), of: inbox.url) == "auth-required" },
                "reported as auth-required")
            #expect(try await RelayWatchTests.watchStatus(gateway)?["user_relays"]?["auth-required"] == 1)
            #expect(try await Self.isLive(gateway, bob, on: inbox.url) == false)
            // Not hammered: the next REQ waits a minute (a passing CLOSED would be retried in 5 s).
            let asked = inbox.records.reduce(0) { $0 + $1.requests }
            try await Task.sleep(for: .seconds(7))
            #expect(inbox.records.reduce(0) { $0 + $1.requests } == asked, "no REQ again within 7 s")
        }
    }

    /// A relay that refuses gift wraps to strangers (`restricted:`) is reported `refused`, in
    /// `GET /v1/devices`, `/admin/status` and the metrics.
    @Test func aRelayThatRestrictsGiftWrapsIsReportedAsRefused() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        let inbox = try HostileRelay(closesGiftWrapRequests: "restricted: gift wraps only for this relay's members")
        try await inbox.start()
        defer { Task { await inbox.stop() } }
        let bob = Keys.generate()
        try await GatewayHarness.run(watch: Self.settings(relay)) { gateway in
            try await Self.register(gateway, bob, HTTP2DeliveryTests.token(0xB5), relays: [inbox.url])
            #expect(
                try await GatewayHarness.eventually { Self.state(try await Self.watch(gateway, bob), of: inbox.url) == "refused" },
                "reported as refused")
            #expect(try await RelayWatchTests.watchStatus(gateway)?["user_relays"]?["refused"] == 1)
            #expect(
                try await GatewayHarness.eventually {
                    String(buffer: try await gateway.client.execute(uri: "/metrics", method: .get).body)
                        .contains(#"linkstr_watch_user_relays{state="refused"} 1"#)
                }, "the metric counts it")
            #expect(try await Self.isLive(gateway, bob, on: inbox.url) == false)
        }
    }

    @Test func aListNamingAPrivateAddressIsRefusedAndNeverConnected() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        let inside = try HostileRelay()
        try await inside.start()
        defer { Task { await inside.stop() } }
        let bob = Keys.generate()
        try await GatewayHarness.run(watch: Self.settings(relay, allowPrivate: false)) { gateway in
            // The registration route refuses the address outright; a list is the user's own
            // event, so the watcher has to judge it.
            let body = GatewayHarness.registerBody(
                HTTP2DeliveryTests.token(0xB4), extra: #","relay_watch":true,"relays":["\#(inside.url)"]"#)
            let refused = try await gateway.send(bob, .post, "/v1/devices/register", json: body)
            #expect(refused.status == .badRequest)
            try await RelayWatchTests.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xB4))
            try await Self.publishInboxList(bob, [inside.url], to: relay)
            #expect(
                try await GatewayHarness.eventually { try await Self.watch(gateway, bob)?["source"] == "10050" },
                "the list was found")
            let watch = try await Self.watch(gateway, bob)
            #expect(Self.state(watch, of: inside.url) == "refused", "\(String(describing: watch))")
            try await Task.sleep(for: .seconds(1))
            #expect(inside.records.isEmpty, "the gateway never connected to a loopback relay")
        }
    }
}
