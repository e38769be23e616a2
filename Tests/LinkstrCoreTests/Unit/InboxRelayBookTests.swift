import LinkstrCore
import NostrProtocol
import Testing

@Suite struct InboxRelayBookTests {
    static let keys = Keys.generate()

    static func list(_ urls: [String], at createdAt: Int64) -> NostrEvent {
        InboxRelayList.event(author: keys.publicKey, relays: urls.map { try! RelayURL($0) }, createdAt: createdAt).signed(by: keys)
    }

    @Test func theNewerListWinsAndAnOlderOneIsIgnored() {
        var book = InboxRelayBook()
        let first = book.apply(list: Self.list(["wss://b.example"], at: 200))
        let older = book.apply(list: Self.list(["wss://a.example"], at: 100))
        #expect(first && !older, "the older list is ignored")
        #expect(book.relays == ["wss://b.example"])
        let newer = book.apply(list: Self.list(["WSS://C.Example/"], at: 300))
        #expect(newer)
        #expect(book.relays == ["wss://c.example"], "normalised")
        #expect(book.nextCreatedAt(now: 250) == 301, "our next list outranks the one we mirrored")
    }

    @Test func changesAreCheckedBeforeAnythingIsPublished() throws {
        var book = InboxRelayBook()
        book.apply(list: Self.list(["wss://a.example"], at: 100))
        #expect(try book.adding("wss://b.example/").map(\.description) == ["wss://a.example", "wss://b.example"])
        #expect(throws: InboxRelayBook.InboxError.duplicate) { try book.adding("WSS://A.example:443") }
        #expect(throws: InboxRelayBook.InboxError.invalidURL("must start with ws:// or wss://")) { try book.adding("https://a.example") }
        #expect(throws: InboxRelayBook.InboxError.unknown) { try book.removing("wss://z.example") }
        #expect(try book.removing("wss://a.example/").isEmpty)
        book.apply(list: Self.list((0..<InboxRelayBook.maxRelays).map { "wss://r\($0).example" }, at: 200))
        #expect(throws: InboxRelayBook.InboxError.full) { try book.adding("wss://one-more.example") }
        #expect(book.relays.count == InboxRelayBook.maxRelays, "adding changes nothing by itself")
    }
}
