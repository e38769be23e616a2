import NostrProtocol
import Testing

@Suite struct InboxRelayListTests {
    @Test func aListIsReadNormalisedAndBounded() throws {
        let keys = Keys.generate()
        var tags: [[String]] = [
            ["relay", "WSS://Inbox.Example/"], ["relay", "wss://inbox.example"], ["relay", "not a url"], ["r", "wss://x.example"],
        ]
        tags += (0..<30).map { ["relay", "wss://r\($0).example"] }
        let event = UnsignedEvent(pubkey: keys.publicKey, kind: EventKind.inboxRelays, tags: tags, content: "").signed(by: keys)
        let list = try #require(InboxRelayList(event))
        #expect(list.relays.first?.description == "wss://inbox.example")
        #expect(list.relays.count == InboxRelayList.maxRelays)
        #expect(list.skipped == 1 + 30 - (InboxRelayList.maxRelays - 1), "the bad URL and those past the cap")
        #expect(list.author == keys.publicKey)
    }

    @Test func onlyKind10050IsAList() throws {
        let keys = Keys.generate()
        let note = UnsignedEvent(pubkey: keys.publicKey, kind: 1, tags: [["relay", "wss://x.example"]], content: "").signed(by: keys)
        #expect(InboxRelayList(note) == nil)
    }

    @Test func aPublishedListReadsBackAndTheNewerReplacesTheOlder() throws {
        let keys = Keys.generate()
        let relays = [try RelayURL("wss://a.example"), try RelayURL("wss://b.example/inbox")]
        let older = InboxRelayList.event(author: keys.publicKey, relays: relays, createdAt: 100).signed(by: keys)
        let newer = InboxRelayList.event(author: keys.publicKey, relays: [relays[0]], createdAt: 200).signed(by: keys)
        #expect(InboxRelayList(older)?.relays == relays)
        #expect(
            older.kind == 10050 && older.content.isEmpty
                && older.tags == [["relay", "wss://a.example"], ["relay", "wss://b.example/inbox"]])
        #expect(InboxRelayList.newer(newer, than: older) && !InboxRelayList.newer(older, than: newer))
    }
}
