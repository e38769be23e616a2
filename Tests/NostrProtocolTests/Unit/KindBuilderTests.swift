import NostrProtocol
import Testing

@Suite struct KindBuilderTests {
    let keys = Keys.generate()

    @Test func deletionRequest() throws {
        let ids = [try EventID(bytes: [UInt8](repeating: 1, count: 32)), try EventID(bytes: [UInt8](repeating: 2, count: 32))]
        let event = DeletionRequest.make(keys: keys, eventIDs: ids, kinds: [1059, 1059], reason: "gone")
        try event.verify()
        #expect(event.kind == 5)
        #expect(event.tags == [["e", ids[0].hex], ["e", ids[1].hex], ["k", "1059"]])
        #expect(event.content == "gone")
        #expect(DeletionRequest.referencedIDs(event) == ids)
    }

    @Test func followList() throws {
        let bob = Keys.generate().publicKey, carol = Keys.generate().publicKey
        let event = FollowList.make(
            keys: keys, entries: [.init(pubkey: bob, relay: "wss://r", petname: "bob"), .init(pubkey: carol), .init(pubkey: bob)])
        try event.verify()
        #expect(event.kind == 3 && event.content.isEmpty)
        #expect(event.tags == [["p", bob.hex, "wss://r", "bob"], ["p", carol.hex]])
        #expect(FollowList.entries(event).map(\.pubkey) == [bob, carol])
        let older = FollowList.make(keys: keys, entries: [], createdAt: event.createdAt - 1)
        #expect(FollowList.isNewer(event, than: older))
        #expect(!FollowList.isNewer(older, than: event))
        let tie = FollowList.make(keys: keys, entries: [.init(pubkey: carol)], createdAt: event.createdAt)
        #expect(FollowList.isNewer(tie, than: event) == (tie.id < event.id))
    }

    @Test func vanishRequest() throws {
        let all = VanishRequest.make(keys: keys, relays: nil)
        try all.verify()
        #expect(all.kind == 62 && all.tags == [["relay", "ALL_RELAYS"]])
        let some = VanishRequest.make(keys: keys, relays: ["wss://a", "wss://b"], reason: "bye")
        #expect(some.tags == [["relay", "wss://a"], ["relay", "wss://b"]] && some.content == "bye")
    }

    @Test func relayAuth() throws {
        let event = RelayAuthEvent.make(keys: keys, relayURL: "wss://relay.example.com/", challenge: "c2a1")
        try event.verify()
        #expect(event.kind == 22242 && event.tags == [["relay", "wss://relay.example.com/"], ["challenge", "c2a1"]])
    }
}
