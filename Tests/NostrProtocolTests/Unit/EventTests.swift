import Foundation
import NostrProtocol
import Testing

@Suite struct EventTests {
    static let secret = "7f7ff03d123792d6ac594bfa67bf6d0c0ab55b6b1fdb6249303fe861f1ccba9a"
    static let helloJSON =
        #"{"id":"89010b2923118aab04e83d330b5b876ff875d98cd0fa34e5b32794b34d66d2eb","pubkey":"17162c921dc4d2518f9a101db33695df1afb56ab82f5ff3e5da6eec3ca5cd917","created_at":1700000000,"kind":1,"tags":[],"content":"hello nostr","sig":"8f565e1a4d6e23d6bc91c268776357464ef74aef2a408f3ae365c62b049e4c9cde76abcee76e68563be56bad3f247d985a4fee840a2012671c587210a9f7ab68"}"#

    /// Embedded from nip01-events.json: the escape-heavy case, the one serializers get wrong.
    @Test func escapesMatchRustNostr() throws {
        let keys = Keys(secretKey: try SecretKey(hex: Self.secret))
        let content = "line1\nline2 \"quoted\" back\\slash cr\r tab\t bs\u{08} ff\u{0C} ctl\u{01}\u{1F} del\u{7F} "
        let event = UnsignedEvent(pubkey: keys.publicKey, createdAt: 1_700_000_000, kind: 1, tags: [], content: content)
        let serialized = String(decoding: event.canonicalSerialization, as: UTF8.self)
        #expect(serialized.contains(#"line1\nline2 \"quoted\" back\\slash cr\r tab\t bs\b ff\f ctl\u0001\u001f del"#))
    }

    @Test func parsesVerifiesAndReserializesExactly() throws {
        let event = try NostrEvent(json: Self.helloJSON)
        try event.verify()
        #expect(event.json == Self.helloJSON)
        #expect(event.pubkey.hex == "17162c921dc4d2518f9a101db33695df1afb56ab82f5ff3e5da6eec3ca5cd917")
    }

    @Test func signingWithZeroAuxIsReproducible() throws {
        let keys = Keys(secretKey: try SecretKey(hex: Self.secret))
        let event = UnsignedEvent(pubkey: keys.publicKey, createdAt: 1_700_000_000, kind: 1, content: "hello nostr")
        #expect(event.id.hex == "89010b2923118aab04e83d330b5b876ff875d98cd0fa34e5b32794b34d66d2eb")
        let signed = event.signed(by: keys, auxRand: [UInt8](repeating: 0, count: 32))
        try signed.verify()
    }

    @Test func detectsTampering() throws {
        let tamperedContent = Self.helloJSON.replacingOccurrences(of: "hello nostr", with: "hello nostR")
        #expect(throws: EventVerificationError.idMismatch) { try NostrEvent(json: tamperedContent).verify() }
        let tamperedSig = Self.helloJSON.replacingOccurrences(of: "9f7ab68\"", with: "9f7ab00\"")
        #expect(throws: EventVerificationError.invalidSignature) { try NostrEvent(json: tamperedSig).verify() }
        // Another author's key with the same id and sig.
        let otherKey = Keys.generate().publicKey.hex
        let swapped = Self.helloJSON.replacingOccurrences(
            of: "17162c921dc4d2518f9a101db33695df1afb56ab82f5ff3e5da6eec3ca5cd917", with: otherKey)
        #expect(throws: EventVerificationError.idMismatch) { try NostrEvent(json: swapped).verify() }
    }

    @Test(arguments: [
        (
            "\"created_at\":1700000000", "\"created_at\":1700000000.5",
            EventDecodingError.wrongType(field: "created_at", expected: "an integer")
        ),
        (
            "\"created_at\":1700000000", "\"created_at\":\"1700000000\"",
            EventDecodingError.wrongType(field: "created_at", expected: "an integer")
        ),
        ("\"created_at\":1700000000", "\"created_at\":-1", EventDecodingError.negativeTimestamp),
        ("\"kind\":1,", "\"kind\":70000,", EventDecodingError.kindOutOfRange),
        ("\"kind\":1,", "\"kind\":1.0,", EventDecodingError.kindOutOfRange),
        ("\"tags\":[]", "\"tags\":[[]]", EventDecodingError.emptyTag(index: 0)),
        ("\"tags\":[]", "\"tags\":[[\"e\",1]]", EventDecodingError.wrongType(field: "tags[0]", expected: "an array of strings")),
        ("\"tags\":[]", "\"tags\":{}", EventDecodingError.wrongType(field: "tags", expected: "an array")),
        ("\"content\":\"hello nostr\"", "\"content\":null", EventDecodingError.wrongType(field: "content", expected: "a string")),
        ("\"id\":\"89010b", "\"id\":\"89010B", EventDecodingError.malformedHex(field: "id")),
        ("\"id\":\"89010b", "\"id\":\"9010b", EventDecodingError.malformedHex(field: "id")),
        ("\"sig\":\"8f", "\"sig\":\"8", EventDecodingError.malformedHex(field: "sig")),
        ("\"pubkey\":\"17162c", "\"pubkey\":\"ffffff", EventDecodingError.invalidPublicKey),
        ("\"content\":\"hello nostr\",", "", EventDecodingError.missingField("content")),
    ])
    func rejectsMalformedFields(find: String, replace: String, expected: EventDecodingError) {
        let json = Self.helloJSON.replacingOccurrences(of: find, with: replace)
        #expect(throws: expected) { try NostrEvent(json: json) }
    }

    @Test func ignoresUnknownFieldsAndDoesNotKeepThem() throws {
        let json = Self.helloJSON.replacingOccurrences(of: "{\"id\"", with: "{\"extra\":{\"x\":[1]},\"id\"")
        let event = try NostrEvent(json: json)
        try event.verify()
        #expect(event.json == Self.helloJSON)
    }

    @Test func rejectsNonObjectsAndBadJSON() {
        #expect(throws: EventDecodingError.notAnObject) { try NostrEvent(json: "[]") }
        #expect {
            try NostrEvent(json: "{")
        } throws: { error in
            if case .json = error as? EventDecodingError { true } else { false }
        }
    }

    @Test func unsignedEventRefusesSignature() {
        #expect(throws: EventDecodingError.unexpectedSignature) { try UnsignedEvent(json: Self.helloJSON) }
    }

    /// Every event in nip01-events.json: exact preimage, id, zero-aux signature, JSON output,
    /// and the invalid events rejected (including the uppercase id that lenient parsers accept).
    @Test(.enabled(if: Vectors.available)) func nip01VectorFile() throws {
        let file = try Vectors.json("nip01-events.json")
        for case let vector in file["events"]!.array {
            let keys = Keys(secretKey: try SecretKey(hex: vector["secret_key"]!.string))
            let unsigned = UnsignedEvent(
                pubkey: keys.publicKey, createdAt: vector["created_at"]!.int, kind: UInt16(vector["kind"]!.int),
                tags: vector["tags"]!.stringArrays, content: vector["content"]!.string)
            let name = vector["description"]!.string
            #expect(String(decoding: unsigned.canonicalSerialization, as: UTF8.self) == vector["serialized"]!.string, "\(name)")
            #expect(unsigned.id.hex == vector["id"]!.string, "\(name)")
            let signed = unsigned.signed(by: keys, auxRand: [UInt8](repeating: 0, count: 32))
            #expect(signed.sig.hex == vector["sig_aux_zero"]!.string, "\(name)")
            let parsed = try NostrEvent(json: vector["event_json"]!.string)
            try parsed.verify()
            #expect(parsed.json == vector["event_json"]!.string, "\(name)")
        }
        for case let invalid in file["invalid_events"]!.array {
            let json = invalid["event_json"]!.string
            let accepted = (try? NostrEvent(json: json))?.isValid ?? false
            #expect(!accepted, "\(invalid["reason"]!.string)")
        }
    }
}
