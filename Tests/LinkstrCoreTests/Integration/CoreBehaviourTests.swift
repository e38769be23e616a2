import Foundation
import LinkstrCore
import NostrProtocol
import TestSupport
import Testing

/// Core behaviour around the edges: read-only relays, an unusable store, renames and list modes,
/// account deletion.
@Suite(.serialized) struct CoreBehaviourTests {
    typealias E = CoreEndToEndTests

    /// rust-nostr's LocalRelay requiring NIP-42 AUTH for writes: our client has no AUTH key for it,
    /// so the relay is read-only and sends are refused at once rather than after the timeout.
    @Test(.enabled(if: RustNostrPeer.enabled, "set LINKSTR_SKIP_INTEROP=1 to skip"))
    func aRelayThatRefusesWritesIsReadOnlyAndSendsFailFast() async throws {
        let relay = try RelayFixture(implementation: .rustNostr(auth: "write"))
        try await relay.start()
        defer { relay.kill() }
        let core = try await E.makeCore(relay: relay)
        #expect(await E.eventually { await core.state().relays.connectedOrReadOnly == 1 })
        // The first refusal turns the relay read-only …
        let first = await core.perform(.createSession(name: "X", members: []))
        #expect(first != .done)
        let row = try #require(await core.state().relays.rows.first)
        #expect(
            row.status.label == "read-only" && row.status.errorText?.isEmpty == false,
            "after the first send (\(first)) the relay is \(row.status.label): \(row.status.errorText ?? "no error text")")
        #expect(await core.state().relays.summary == "1 / 1", "read-only counts in the header figure")
        // … and the next send is refused at once.
        let started = ContinuousClock.now
        #expect(await core.perform(.createSession(name: "X", members: [])) == .failed(RelayPool.SendError.onlyReadOnlyRelays.description))
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(await core.state().sessions.rows.isEmpty, "nothing applied locally")
        await core.shutdown()
    }

    /// A relay that was healthy and drops raises a toast; a foreground restart rebuilds the
    /// connections from scratch and they come back.
    @Test func aDroppedRelayToastsAndAForegroundRestartReconnects() async throws {
        let port = try LoopbackPort.free()
        let relay = try RelayFixture(port: port)
        try await relay.start()
        let core = try await E.makeCore(relay: relay)
        #expect(await E.eventually { await core.state().relays.connectedOrReadOnly == 1 })
        #expect(await core.state().toast == nil, "no toast while connecting")
        relay.kill()
        #expect(await E.eventually { await core.state().toast == "relay offline: \(relay.url)" })
        #expect(await core.state().relays.connectedOrReadOnly == 0)
        let again = try RelayFixture(port: port)
        try await again.start()
        defer { again.kill() }
        #expect(await core.perform(.stopRelays) == .done)
        #expect(await core.perform(.startRelays) == .done)
        #expect(await E.eventually { await core.state().relays.connectedOrReadOnly == 1 })
        let result = await core.perform(.createSession(name: "Back", members: []))
        guard case .navigate = result else {
            Issue.record("sending after the restart failed: \(result)")
            return
        }
        await core.shutdown()
    }

    /// Contacts are the kind-3 follow list: a second device of the same account mirrors it (live
    /// too), while aliases stay on the device that set them.
    @Test func contactsMirrorTheFollowListAcrossDevices() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        let account = Keys.generate(), friend = Keys.generate()
        let phone = try await E.makeCore(relay: relay, identity: .importIdentity(account.secretKey.exportNsec()))
        #expect(await E.eventually { await phone.state().relays.connectedOrReadOnly == 1 })
        #expect(await phone.perform(.addContact(friend.publicKey.npub, alias: "Buddy")) == .done)
        #expect(await phone.state().contacts.map(\.displayName) == ["Buddy"])
        #expect(
            await phone.perform(.addContact(friend.publicKey.hex, alias: nil))
                == .failed(CoreError.invalidMember("already a contact").description))
        #expect(await phone.perform(.addContact("npub1nope", alias: nil)) != .done)
        #expect(await phone.state().contacts.count == 1)

        let tablet = try await E.makeCore(relay: relay, identity: .importIdentity(account.secretKey.exportNsec()))
        #expect(await E.eventually { await tablet.state().contacts.map(\.pubkey) == [friend.publicKey.hex] })
        #expect(await tablet.state().contacts.first?.displayName == friend.publicKey.npub, "the alias was never published")

        #expect(await phone.perform(.removeContact(friend.publicKey.npub)) == .done)
        #expect(await phone.state().contacts.isEmpty)
        #expect(await E.eventually { await tablet.state().contacts.isEmpty }, "the newer list replaces the old one, live")
        await phone.shutdown()
        await tablet.shutdown()
    }

    /// Member names: alias, else the kind-0 profile name, else the npub.
    @Test func memberNamesComeFromProfilesUnlessAliased() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        let aliceKeys = Keys.generate()
        let alice = try await E.makeCore(relay: relay, identity: .importIdentity(aliceKeys.secretKey.exportNsec()))
        let bob = try await E.makeCore(relay: relay)
        let bobKey = try #require(await bob.state().identity?.pubkey)
        #expect(await E.eventually { await alice.state().relays.connectedOrReadOnly == 1 })
        let older = aliceKeys.sign(kind: EventKind.metadata, content: #"{"name":"old"}"#, createdAt: UnixTime.now() - 100)
        let profile = aliceKeys.sign(kind: EventKind.metadata, content: #"{"name":"alice","display_name":"Alice L."}"#)
        try await alice.pool.publish([older, profile])
        guard case .navigate(let sessionID) = await alice.perform(.createSession(name: "Names", members: [bobKey])) else {
            Issue.record("no session")
            return
        }
        #expect(await E.eventually { await bob.state().sessions.rows.count == 1 })
        #expect(await bob.perform(.openSession(sessionID)) == .done)
        #expect(
            await E.eventually { await bob.state().feed?.members.first { $0.pubkey == aliceKeys.publicKey.hex }?.displayName == "Alice L." }
        )
        #expect(await bob.perform(.setAlias(pubkey: aliceKeys.publicKey.npub, alias: "Mum")) == .done)
        #expect(await bob.state().feed?.members.first { $0.pubkey == aliceKeys.publicKey.hex }?.displayName == "Mum")
        #expect(await bob.state().feed?.members.first { $0.pubkey == bobKey }?.displayName == (try PublicKey(hex: bobKey)).npub)
        await alice.shutdown()
        await bob.shutdown()
    }

    @Test func aStoreThatCannotBeOpenedIsAnErrorStateNotACrash() async throws {
        let directory = E.temporaryDirectory()
        try Data(repeating: 0x42, count: 4096).write(to: directory.appendingPathComponent("linkstr.sqlite"))
        let core = try LinkstrAppCore(configuration: CoreConfiguration(dataDirectory: directory))
        let toast = try #require(await core.state().toast)
        #expect(toast.contains("cannot open the local store"))
        let result = await core.perform(.createIdentity)
        guard case .failed(let reason) = result else {
            Issue.record("expected a failure, got \(result)")
            return
        }
        #expect(reason.contains("cannot open the local store"))
        #expect(await core.state().identity == nil)
        #expect(try Data(contentsOf: directory.appendingPathComponent("linkstr.sqlite")) == Data(repeating: 0x42, count: 4096))
        await core.shutdown()
    }

    @Test func renameArchiveListModesAndAccountDeletion() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        let directory = E.temporaryDirectory()
        let core = try await E.makeCore(relay: relay, directory: directory)
        let friend = Keys.generate().publicKey.npub
        #expect(await E.eventually { await core.state().relays.connectedOrReadOnly == 1 })
        guard case .navigate(let first) = await core.perform(.createSession(name: "One", members: [friend])),
            case .navigate(let second) = await core.perform(.createSession(name: "Two", members: []))
        else {
            Issue.record("sessions not created")
            return
        }
        #expect(await core.perform(.renameSession(sessionID: first, name: "  Uno ")) == .done)
        #expect(await core.perform(.renameSession(sessionID: first, name: " ")) == .failed(CoreError.blankSessionName.description))
        #expect(Set(await core.state().sessions.rows.map(\.name)) == ["Uno", "Two"])

        // Archive is local and non-destructive; list modes show one side at a time.
        #expect(await core.perform(.setArchived(sessionID: second, true)) == .done)
        var sessions = await core.state().sessions
        #expect(sessions.rows.map(\.id) == [first] && sessions.hasArchived)
        #expect(await core.perform(.setListMode(.archived)) == .done)
        #expect(await core.state().sessions.rows.map(\.id) == [second])
        #expect(await core.perform(.setArchived(sessionID: second, false)) == .done)
        sessions = await core.state().sessions
        #expect(sessions.rows.isEmpty && !sessions.hasArchived)
        #expect(await core.perform(.setListMode(.active)) == .done)
        #expect(await core.state().sessions.rows.count == 2)

        // The creator deletes a session: gone locally (and for members, by the tombstone rule).
        #expect(await core.perform(.deleteSession(sessionID: second)) == .done)
        #expect(await core.state().sessions.rows.map(\.id) == [first])

        // Deleting the account publishes an empty follow list and a request to vanish, then erases everything.
        let pubkey = try #require(await core.state().identity?.pubkey)
        #expect(await core.perform(.deleteAccount) == .done)
        #expect(await core.state().identity == nil)
        let author = try PublicKey(hex: pubkey)
        let vanish = try await E.stored(on: relay, Filter(authors: [author], kinds: [EventKind.requestToVanish]))
        #expect(vanish.count == 1 && vanish.first?.tagValues("relay") == [relay.url], "a NIP-62 request naming the account's relays")
        let follows = try await E.stored(on: relay, Filter(authors: [author], kinds: [EventKind.followList]))
        #expect(follows.count == 1 && follows.first?.tagValues("p").isEmpty == true, "an empty follow list")
        let secrets = try FileSecretStore(directory: directory.appendingPathComponent("secrets"))
        #expect(try secrets.read("nsec.\(pubkey)") == nil)
        #expect(try secrets.read("datakey.\(pubkey)") == nil)
        #expect(try LinkstrStore(path: directory.appendingPathComponent("linkstr.sqlite").path).owners().isEmpty)
        await core.shutdown()
    }
}
