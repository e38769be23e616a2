import Foundation
import NostrProtocol
import TestSupport
import Testing

/// `ClientMessage(json:)`, `RelayMessage(json:)` and `NostrEvent(json:)` read an EVENT without a
/// `JSONValue` tree where they can, and with the general parser otherwise. Whatever route they
/// take, the event must be the one the general route makes of the same text (`JSONValue`, then
/// `NostrEvent(jsonValue:)`), and they must refuse what it refuses.
@Suite struct EventReaderTests {
    static let keys = Keys(secretKey: try! SecretKey(hex: "7f7ff03d123792d6ac594bfa67bf6d0c0ab55b6b1fdb6249303fe861f1ccba9a"))
    static let recipient = Keys(secretKey: try! SecretKey(hex: "4b22aa260e4acb7021e32f38a6cdf4b673c6a277755bfce287e370c924dc936d"))
    static let wrap: NostrEvent = {
        let rumor = UnsignedEvent(
            pubkey: keys.publicKey, kind: 14, tags: [["p", recipient.publicKey.hex]], content: "https://example.com/é \"read\"\n")
        return try! GiftWrap.make(rumor, author: keys, recipient: recipient.publicKey)
    }()
    static let note = keys.sign(
        kind: 1, tags: [["e", String(repeating: "ab", count: 32), "wss://r.example", "root"], ["t", "ünïcode 🎉"]],
        content: "line1\nline2 \"q\" back\\slash \u{01}\u{7F} é 🎉", createdAt: 1_700_000_000)

    // MARK: The general route, as the reference

    static func generalClientEvent(_ text: String) -> NostrEvent? {
        guard case .array(let items)? = try? JSONValue(parsing: text), items.count == 2, items[0] == "EVENT" else { return nil }
        return try? NostrEvent(jsonValue: items[1])
    }

    static func generalRelayEvent(_ text: String) -> (String, NostrEvent)? {
        guard case .array(let items)? = try? JSONValue(parsing: text), items.count == 3, items[0] == "EVENT",
            case .string(let id) = items[1], !id.isEmpty, id.count <= 64, let event = try? NostrEvent(jsonValue: items[2])
        else { return nil }
        return (id, event)
    }

    static func generalEvent(_ text: String) -> NostrEvent? {
        guard let value = try? JSONValue(parsing: text) else { return nil }
        return try? NostrEvent(jsonValue: value)
    }

    static func clientEvent(_ text: String) -> NostrEvent? {
        guard case .event(let event)? = try? ClientMessage(json: text) else { return nil }
        return event
    }

    static func relayEvent(_ text: String) -> (String, NostrEvent)? {
        guard case .event(let id, let event)? = try? RelayMessage(json: text) else { return nil }
        return (id, event)
    }

    /// All three entry points on `text`: how many accepted it, and which disagree with the
    /// general route.
    static func agreement(_ text: String) -> (accepted: Int, disagreeing: [String]) {
        var disagreeing: [String] = []
        let client = clientEvent(text)
        if client != generalClientEvent(text) { disagreeing.append("ClientMessage") }
        let relay = relayEvent(text)
        let generalRelay = generalRelayEvent(text)
        if relay?.0 != generalRelay?.0 || relay?.1 != generalRelay?.1 { disagreeing.append("RelayMessage") }
        let bare = try? NostrEvent(json: text)
        if bare != generalEvent(text) { disagreeing.append("NostrEvent") }
        return ([client != nil, relay != nil, bare != nil].filter { $0 }.count, disagreeing)
    }

    /// Checks all three entry points on `text`; returns how many accepted it.
    @discardableResult
    static func expectAgreement(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> Int {
        let (accepted, disagreeing) = agreement(text)
        #expect(disagreeing.isEmpty, "\(disagreeing) disagree on: \(text)", sourceLocation: sourceLocation)
        return accepted
    }

    // MARK: Tests

    @Test func readsWhatItWritesInEveryForm() throws {
        for event in [Self.wrap, Self.note] {
            #expect(try ClientMessage(json: ClientMessage.event(event).json) == .event(event))
            #expect(
                try RelayMessage(json: RelayMessage.event(subscriptionID: "w-1", event: event).json)
                    == .event(subscriptionID: "w-1", event: event))
            #expect(try NostrEvent(json: event.json) == event)
            try NostrEvent(json: event.json).verify()
        }
    }

    /// Inputs where the two routes could part: each one is checked on all three entry points,
    /// and the ones the general parser accepts must still be accepted.
    @Test func agreesOnTheEdges() throws {
        let event = Self.note.json
        let message = #"["EVENT",\#(event)]"#
        let id = Self.note.id.hex
        let deep61 = String(repeating: "[", count: 61) + String(repeating: "]", count: 61)
        let deep63 = String(repeating: "[", count: 63) + String(repeating: "]", count: 63)
        let accepted: [String] = [
            // whitespace everywhere JSON allows it
            " [ \"EVENT\" ,\n\t" + event.replacingOccurrences(of: ",\"", with: " , \"").replacingOccurrences(of: "\":", with: "\" : ")
                + " ] ",
            // hex written with an escape, keys written with escapes, keys in another order
            message.replacingOccurrences(of: "\"id\":\"\(id.prefix(1))", with: "\"id\":\"\\u00\(String(id.utf8.first!, radix: 16))"),
            message.replacingOccurrences(of: "\"kind\"", with: "\"\\u006bind\""),
            #"["EVENT",{"sig":"\#(Self.note.sig.hex)","content":"x","tags":[["a"]],"kind":1,"created_at":0,"pubkey":"\#(Self.note.pubkey.hex)","id":"\#(id)"}]"#,
            // a key NIP-01 does not define, and one nested deeply
            message.replacingOccurrences(of: "{\"id\"", with: "{\"seen_on\":[\"wss://r\"],\"id\""),
            message.replacingOccurrences(of: "{\"id\"", with: "{\"x\":\(deep61),\"id\""),
            // the kind range's ends
            message.replacingOccurrences(of: "\"kind\":1,", with: "\"kind\":65535,"),
            message.replacingOccurrences(of: "\"kind\":1,", with: "\"kind\":-0,"),
        ]
        for text in accepted {
            #expect(Self.clientEvent(text) != nil, "should be accepted: \(text)")
            Self.expectAgreement(text)
        }
        let refused: [String] = [
            message.replacingOccurrences(of: id, with: id.uppercased()),
            message.replacingOccurrences(of: "\"kind\":1,", with: "\"kind\":1,\"kind\":1,"),
            message.replacingOccurrences(of: "\"kind\":1,", with: "\"kind\":65536,"),
            message.replacingOccurrences(of: "\"kind\":1,", with: "\"kind\":1.0,"),
            message.replacingOccurrences(of: "\"created_at\":1700000000", with: "\"created_at\":-1"),
            message.replacingOccurrences(of: "\"created_at\":1700000000", with: "\"created_at\":17e8"),
            message.replacingOccurrences(of: "\"created_at\":1700000000", with: "\"created_at\":99999999999999999999"),
            message.replacingOccurrences(of: "\"tags\":[", with: "\"tags\":[[],"),
            message.replacingOccurrences(of: "\"tags\":[", with: "\"tags\":[[1],"),
            message.replacingOccurrences(of: "\"content\":\"", with: "\"content\":\"\\x"),
            message.replacingOccurrences(of: "\"content\":\"", with: "\"content\":\"\\ud800"),
            message.replacingOccurrences(of: "\"content\":\"", with: "\"content\":\"\t"),
            message.replacingOccurrences(of: "{\"id\"", with: "{\"x\":\(deep63),\"id\""),
            message.replacingOccurrences(
                of: "\"pubkey\":\"\(Self.note.pubkey.hex)", with: "\"pubkey\":\"\(String(repeating: "f", count: 64))"),
            message + " x",
            #"["EVENT",\#(event),1]"#,
            #"["EVENT"]"#,
            #"["EVENT","s"]"#,
            #"["EVENT",\#(event)"#,
            String(message.dropLast(2)) + "]",
        ]
        for text in refused {
            #expect(Self.clientEvent(text) == nil, "should be refused: \(text)")
            Self.expectAgreement(text)
        }
        // The subscription id's bounds, which only a relay's EVENT has.
        for (sub, ok) in [("", false), (String(repeating: "s", count: 64), true), (String(repeating: "s", count: 65), false), ("é🎉", true)]
        {
            let text = #"["EVENT","\#(sub)",\#(event)]"#
            #expect((Self.relayEvent(text) != nil) == ok, "subscription id \(sub)")
            Self.expectAgreement(text)
        }
    }

    /// The errors are the general parser's, as before there was a faster route.
    @Test func refusalsKeepTheirErrors() {
        let message = #"["EVENT",\#(Self.note.json)]"#
        #expect(throws: RelayMessageError.event(.kindOutOfRange)) {
            try ClientMessage(json: message.replacingOccurrences(of: "\"kind\":1,", with: "\"kind\":65536,"))
        }
        #expect(throws: RelayMessageError.event(.emptyTag(index: 0))) {
            try ClientMessage(json: message.replacingOccurrences(of: "\"tags\":[", with: "\"tags\":[[],"))
        }
        #expect(throws: RelayMessageError.event(.malformedHex(field: "sig"))) {
            try ClientMessage(json: message.replacingOccurrences(of: "\"sig\":\"", with: "\"sig\":\"0"))
        }
        #expect(throws: EventDecodingError.negativeTimestamp) {
            try NostrEvent(json: Self.note.json.replacingOccurrences(of: "\"created_at\":1700000000", with: "\"created_at\":-5"))
        }
        #expect(throws: RelayMessageError.malformed("EVENT takes one event")) {
            try ClientMessage(json: #"["EVENT",\#(Self.note.json),1]"#)
        }
    }

    /// Strings are scanned eight bytes at a time until a byte may end the plain run: a quote, a
    /// backslash or a control character must stop the scan wherever it falls in a word.
    @Test func stringsEndEscapeAndRefuseAtEveryOffset() throws {
        for offset in 0..<20 {
            for tail in ["", "é🎉xyzxyzxyz", String(repeating: "q", count: 9)] {
                let head = String(repeating: "é", count: offset / 2) + String(repeating: "a", count: offset % 2)
                #expect(try JSONValue(parsing: "\"\(head)\"") == .string(head))
                #expect(try JSONValue(parsing: "\"\(head)\\n\(tail)\"") == .string(head + "\n" + tail))
                #expect(try JSONValue(parsing: "\"\(head)\\\"\(tail)\"") == .string(head + "\"" + tail))
                #expect(try JSONValue(parsing: "[\"\(head)\",\"\(tail)\"]") == .array([.string(head), .string(tail)]))
                for control in ["\u{00}", "\u{01}", "\n", "\u{1F}"] {
                    #expect(throws: JSONError.self) { try JSONValue(parsing: "\"\(head)\(control)\(tail)\"") }
                }
                #expect(try JSONValue(parsing: "\"\(head)\u{7F} \(tail)\"") == .string(head + "\u{7F} " + tail))
                // The writer scans the same way: each byte that needs an escape gets it, wherever it falls.
                for special in ["\"", "\\", "\n", "\u{01}", "\u{1F}", "/", "\u{7F}"] {
                    let text = head + special + tail + special
                    #expect(JSONValue.string(text).serialized == Self.escapedOneByOne(text))
                }
            }
        }
    }

    /// JSON strings are checked for valid UTF-8 without the standard library's generic validator;
    /// they must accept and refuse exactly what it does: every two-byte sequence that starts with
    /// a lead byte, and seeded runs of up to six bytes biased toward lead and continuation bytes.
    @Test func utf8ValidityMatchesTheStandardLibrary() async {
        var samples: [[UInt8]] = []
        for lead in UInt8(0x80)...0xFF {
            samples.append([lead])
            for next in UInt8(0x20)...0xFF { samples.append([lead, next]) }
        }
        var random = SeededGenerator(seed: 0xF4)
        let interesting: [UInt8] = [
            0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF,
        ]
        for _ in 0..<40_000 {
            samples.append((0..<Int.random(in: 1...6, using: &random)).map { _ in interesting.randomElement(using: &random)! })
        }
        var valid = 0
        var mismatches: [String] = []
        for (index, bytes) in samples.enumerated() where !bytes.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) {
            // CPU-bound for seconds in a debug build: let the other tests' tasks run meanwhile.
            if index % 500 == 0 { await Task.yield() }
            let expected = String(validating: bytes, as: UTF8.self)
            let parsed = try? JSONValue(parsing: [0x22] + bytes + [0x22])
            if parsed != expected.map({ .string($0) }) { mismatches.append("\(bytes)") }
            // The same bytes after an escape take the parser's other path.
            let escaped = try? JSONValue(parsing: [0x22, 0x5C, 0x6E] + bytes + [0x22])
            if escaped != expected.map({ .string("\n" + $0) }) { mismatches.append("\(bytes) after an escape") }
            if expected != nil { valid += 1 }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) mismatches, the first: \(mismatches.prefix(5))")
        #expect(valid > 1_000)
    }

    /// NIP-01's escaping, byte by byte: the reference for the writer's word-at-a-time scan.
    static func escapedOneByOne(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case _ where scalar.value < 0x20: out += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// Seeded mutations of real messages: bytes replaced, dropped, doubled, and inserted from the
    /// characters that matter to JSON. Many mutants stay valid (a changed content byte still
    /// parses), so both acceptance and refusal are exercised; the counts below make sure of it.
    @Test func agreesOnMutatedMessages() async {
        var random = SeededGenerator(seed: 0x1059)
        let alphabet = Array(#"{}[],:" \-.0123456789abcdefABCDEFEVNTuxé"#.utf8) + [0x5C, 0x0A, 0x00, 0x7F]
        let seeds = [Self.wrap, Self.note].flatMap { event in
            [ClientMessage.event(event).json, RelayMessage.event(subscriptionID: "sub", event: event).json, event.json]
        }
        var accepted = 0, refused = 0
        var disagreements: [String] = []
        for seed in seeds {
            let original = Array(seed.utf8)
            for round in 0..<1_500 {
                // CPU-bound for seconds in a debug build: let the other tests' tasks run meanwhile.
                if round % 100 == 0 { await Task.yield() }
                var bytes = original
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    let at = Int.random(in: 0..<bytes.count, using: &random)
                    switch Int.random(in: 0..<4, using: &random) {
                    case 0: bytes[at] = alphabet.randomElement(using: &random)!
                    case 1: bytes.remove(at: at)
                    case 2: bytes.insert(alphabet.randomElement(using: &random)!, at: at)
                    default: bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + 8)], at: at)
                    }
                }
                let text = String(decoding: bytes, as: UTF8.self)
                let (count, disagreeing) = Self.agreement(text)
                if !disagreeing.isEmpty { disagreements.append("\(disagreeing) on: \(text)") }
                if count > 0 { accepted += 1 } else { refused += 1 }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.count) disagreements, the first: \(disagreements.prefix(3))")
        #expect(accepted > 1_000)
        #expect(refused > 1_000)
    }
}
