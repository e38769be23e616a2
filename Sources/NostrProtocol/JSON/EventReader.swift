/// Reads the inputs that carry one signed event straight into the event's fields, with no
/// `JSONValue` tree in between: `["EVENT",{…}]` as a client sends it, `["EVENT","<sub>",{…}]`
/// as a relay sends it, and a bare event object. These are the hot path of an inbox relay, a
/// relay watcher and an unwrap: an EVENT carrying a 2 KB gift wrap took about 128,000
/// instructions through the tree and takes about 71,000 here, 43,000 of them the sender key's
/// square root (`scripts/bench-instructions.sh`).
///
/// A fast path only: it answers nil for anything it does not read cleanly — bad JSON, a field
/// missing or of the wrong type, hex with escapes, a key NIP-01 does not define or one written
/// with an escape, a duplicate key —
/// and the caller then reads the input with the general parser, whose answer (an event, or the
/// error to report) stands. So every error a sender sees is the general parser's, and the fast
/// path only has to be right about what it accepts: it accepts an input only where the general
/// parser accepts it with the same event. `EventReaderTests` and the `relay-message` and `event`
/// fuzz targets check exactly that, against the public `JSONValue` route.
struct EventReader {
    private var parser: JSONParser

    private init(_ bytes: UnsafeBufferPointer<UInt8>) { parser = JSONParser(bytes) }

    /// The event of `["EVENT",{…}]`.
    static func clientEvent(_ text: String) -> NostrEvent? {
        read(text) { reader in reader.message(subscription: false)?.event }
    }

    /// The subscription id and event of `["EVENT","<sub>",{…}]`.
    static func relayEvent(_ text: String) -> (subscriptionID: String, event: NostrEvent)? {
        read(text) { reader in
            guard let (id, event) = reader.message(subscription: true), let id else { return nil }
            return (id, event)
        }
    }

    /// A bare event object.
    static func event(_ text: String) -> NostrEvent? {
        read(text) { reader in reader.bareEvent() }
    }

    /// A bare event object, from bytes that need not be valid UTF-8 (the general parser refuses
    /// what is not).
    static func event(_ bytes: [UInt8]) -> NostrEvent? {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = EventReader(buffer)
            return reader.bareEvent()
        }
    }

    private mutating func bareEvent() -> NostrEvent? {
        parser.skipWhitespace()
        guard let event = eventObject(depth: 1) else { return nil }
        parser.skipWhitespace()
        return atEnd ? event : nil
    }

    /// Runs `body` over the text's UTF-8 in place. A string without contiguous UTF-8 (one bridged
    /// from elsewhere) takes the general path.
    private static func read<Value>(_ text: String, _ body: (inout EventReader) -> Value?) -> Value? {
        let result = text.utf8.withContiguousStorageIfAvailable { bytes -> Value? in
            var reader = EventReader(bytes)
            return body(&reader)
        }
        return result ?? nil
    }

    private var atEnd: Bool { parser.index == parser.bytes.count }

    private func next(is byte: UInt8) -> Bool { parser.index < parser.bytes.count && parser.bytes[parser.index] == byte }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard next(is: byte) else { return false }
        parser.index += 1
        return true
    }

    /// `,` with the whitespace JSON allows around it.
    private mutating func consumeSeparator(_ byte: UInt8) -> Bool {
        parser.skipWhitespace()
        guard consume(byte) else { return false }
        parser.skipWhitespace()
        return true
    }

    /// A key's bytes between its quotes, when it has no escape: what a NIP-01 key is. Compared as
    /// bytes, no string is made; a key with an escape is left to the general parser.
    private mutating func plainKey() -> UnsafeBufferPointer<UInt8>? {
        guard consume(UInt8(ascii: "\"")) else { return nil }
        let start = parser.index
        let end = JSONPlainBytes.firstNotPlain(in: parser.bytes, from: start)
        guard end < parser.bytes.count, parser.bytes[end] == UInt8(ascii: "\"") else { return nil }
        parser.index = end + 1
        return UnsafeBufferPointer(rebasing: parser.bytes[start..<end])
    }

    private mutating func string() -> String? {
        guard next(is: UInt8(ascii: "\"")) else { return nil }
        return try? parser.parseString()
    }

    /// `["EVENT",` then, for a relay's message, a subscription id and `,`, then the event and `]`.
    /// The general parser sees the array at depth 1 and the event object at depth 2.
    private mutating func message(subscription: Bool) -> (subscriptionID: String?, event: NostrEvent)? {
        parser.skipWhitespace()
        guard consume(UInt8(ascii: "[")) else { return nil }
        parser.skipWhitespace()
        guard string() == "EVENT", consumeSeparator(UInt8(ascii: ",")) else { return nil }
        var subscriptionID: String?
        if subscription {
            // The general path's rule for a subscription id (`MessageArray.subscriptionID`).
            guard let id = string(), !id.isEmpty, id.count <= 64, consumeSeparator(UInt8(ascii: ",")) else { return nil }
            subscriptionID = id
        }
        guard let event = eventObject(depth: 2), consumeSeparator(UInt8(ascii: "]")), atEnd else { return nil }
        return (subscriptionID, event)
    }

    /// The seven NIP-01 fields, each once, in any order, with the checks `EventFields.decode`
    /// makes. Nothing else is read here: an unknown key sends the input to the general parser.
    private mutating func eventObject(depth: Int) -> NostrEvent? {
        guard depth <= JSONParser.maxDepth, consume(UInt8(ascii: "{")) else { return nil }
        var id: [UInt8]?, pubkey: [UInt8]?, sig: [UInt8]?
        var createdAt: Int64?, kind: Int64?
        var tags: [[String]]?, content: String?
        parser.skipWhitespace()
        while true {
            guard let key = plainKey(), consumeSeparator(UInt8(ascii: ":")) else { return nil }
            switch EventKey(key) {
            case .id:
                guard id == nil, let value = hex(bytes: 32) else { return nil }
                id = value
            case .pubkey:
                guard pubkey == nil, let value = hex(bytes: 32) else { return nil }
                pubkey = value
            case .sig:
                guard sig == nil, let value = hex(bytes: 64) else { return nil }
                sig = value
            case .createdAt:
                guard createdAt == nil, let value = integer() else { return nil }
                createdAt = value
            case .kind:
                guard kind == nil, let value = integer() else { return nil }
                kind = value
            case .tags:
                guard tags == nil, let value = tagArrays(depth: depth + 1) else { return nil }
                tags = value
            case .content:
                guard content == nil, let value = string() else { return nil }
                content = value
            case nil:
                return nil
            }
            parser.skipWhitespace()
            if consume(UInt8(ascii: "}")) { break }
            guard consumeSeparator(UInt8(ascii: ",")) else { return nil }
        }
        guard let id, let pubkey, let sig, let createdAt, createdAt >= 0, let kind, let kind = UInt16(exactly: kind),
            let tags, let content, let publicKey = try? PublicKey(bytes: pubkey), let signature = try? Signature(bytes: sig)
        else { return nil }
        return NostrEvent(
            id: EventID(unchecked: id), pubkey: publicKey, createdAt: createdAt, kind: kind, tags: tags, content: content, sig: signature)
    }

    /// A string of exactly `bytes * 2` lowercase hex digits, decoded where it lies.
    private mutating func hex(bytes count: Int) -> [UInt8]? {
        let start = parser.index + 1
        let end = start + count * 2
        guard next(is: UInt8(ascii: "\"")), end < parser.bytes.count, parser.bytes[end] == UInt8(ascii: "\""),
            let decoded = Hex.decode(UnsafeBufferPointer(rebasing: parser.bytes[start..<end]), allowUppercase: false)
        else { return nil }
        parser.index = end + 1
        return decoded
    }

    /// A number the general parser reads as an integer. `parseNumber` refuses anything that does
    /// not start a number; it only needs a byte to look at.
    private mutating func integer() -> Int64? {
        guard parser.index < parser.bytes.count, case .integer(let value)? = try? parser.parseNumber() else { return nil }
        return value
    }

    /// `[[string, …], …]` with no empty tag. The outer array is at `depth`, each tag one deeper.
    private mutating func tagArrays(depth: Int) -> [[String]]? {
        guard depth + 1 <= JSONParser.maxDepth, consume(UInt8(ascii: "[")) else { return nil }
        var tags: [[String]] = []
        parser.skipWhitespace()
        if consume(UInt8(ascii: "]")) { return tags }
        while true {
            guard consume(UInt8(ascii: "[")) else { return nil }
            var tag: [String] = []
            parser.skipWhitespace()
            while true {
                guard let item = string() else { return nil }
                tag.append(item)
                parser.skipWhitespace()
                if consume(UInt8(ascii: "]")) { break }
                guard consumeSeparator(UInt8(ascii: ",")) else { return nil }
            }
            tags.append(tag)
            parser.skipWhitespace()
            if consume(UInt8(ascii: "]")) { return tags }
            guard consumeSeparator(UInt8(ascii: ",")) else { return nil }
        }
    }
}

/// The keys of a NIP-01 event object, read from a key's raw bytes. Plain ASCII, so equal bytes
/// are equal strings: no other spelling of these keys is canonically equivalent to them.
private enum EventKey {
    case id, pubkey, sig, createdAt, kind, tags, content

    init?(_ bytes: UnsafeBufferPointer<UInt8>) {
        func equals(_ literal: StaticString) -> Bool {
            literal.utf8CodeUnitCount == bytes.count
                && UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount).elementsEqual(bytes)
        }
        switch bytes.count {
        case 2 where equals("id"): self = .id
        case 3 where equals("sig"): self = .sig
        case 4 where equals("kind"): self = .kind
        case 4 where equals("tags"): self = .tags
        case 6 where equals("pubkey"): self = .pubkey
        case 7 where equals("content"): self = .content
        case 10 where equals("created_at"): self = .createdAt
        default: return nil
        }
    }
}
