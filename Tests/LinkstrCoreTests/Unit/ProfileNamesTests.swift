import LinkstrCore
import NostrProtocol
import Testing

@Suite struct ProfileNamesTests {
    @Test func theNewestValidProfileWinsAndOnlyItsNameIsKept() {
        let keys = Keys.generate()
        var names = ProfileNames()
        func apply(_ event: NostrEvent) -> Bool { names.apply(event) }
        #expect(apply(keys.sign(kind: EventKind.metadata, content: #"{"name":"first"}"#, createdAt: 100)))
        #expect(names.name(for: keys.publicKey.hex) == "first")
        #expect(!apply(keys.sign(kind: EventKind.metadata, content: #"{"name":"older"}"#, createdAt: 50)))
        #expect(apply(keys.sign(kind: EventKind.metadata, content: #"{"name":"n","display_name":"  Shown\nName "}"#, createdAt: 200)))
        #expect(names.name(for: keys.publicKey.hex) == "Shown Name")
        // Not JSON, no name, wrong kind, or a forged signature: ignored.
        #expect(!apply(keys.sign(kind: EventKind.metadata, content: "nope", createdAt: 300)))
        #expect(!apply(keys.sign(kind: EventKind.metadata, content: #"{"about":"x"}"#, createdAt: 300)))
        #expect(!apply(keys.sign(kind: 1, content: #"{"name":"note"}"#, createdAt: 300)))
        let good = keys.sign(kind: EventKind.metadata, content: #"{"name":"forged"}"#, createdAt: 400)
        let forged = NostrEvent(
            id: good.id, pubkey: good.pubkey, createdAt: good.createdAt, kind: good.kind, tags: good.tags, content: #"{"name":"evil"}"#,
            sig: good.sig)
        #expect(!apply(forged))
        #expect(names.name(for: keys.publicKey.hex) == "Shown Name")
    }
}
