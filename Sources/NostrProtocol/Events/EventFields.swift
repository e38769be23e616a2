/// The fields shared by signed events and rumors, and the NIP-01 id computation over them.
struct EventFields {
    /// Serializes `[0,pubkey,created_at,kind,tags,content]` exactly as NIP-01 and rust-nostr do.
    static func canonicalSerialization(pubkey: PublicKey, createdAt: Int64, kind: UInt16, tags: [[String]], content: String) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 128 + content.utf8.count)
        writer.raw("[0,")
        writer.hexString(pubkey.bytes)
        writer.byte(UInt8(ascii: ","))
        writer.integer(createdAt)
        writer.byte(UInt8(ascii: ","))
        writer.integer(kind)
        writer.byte(UInt8(ascii: ","))
        writer.tags(tags)
        writer.byte(UInt8(ascii: ","))
        writer.string(content)
        writer.byte(UInt8(ascii: "]"))
        return writer.bytes
    }

    static func computeID(pubkey: PublicKey, createdAt: Int64, kind: UInt16, tags: [[String]], content: String) -> EventID {
        EventID(
            unchecked: SHA256Bytes.hash(
                canonicalSerialization(pubkey: pubkey, createdAt: createdAt, kind: kind, tags: tags, content: content)))
    }

    /// Writes the event object in rust-nostr's key order; `sig` is omitted for rumors.
    static func writeObject(
        id: EventID, pubkey: PublicKey, createdAt: Int64, kind: UInt16, tags: [[String]], content: String, sig: Signature?
    ) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 300 + content.utf8.count)
        writer.raw("{\"id\":")
        writer.hexString(id.bytes)
        writer.raw(",\"pubkey\":")
        writer.hexString(pubkey.bytes)
        writer.raw(",\"created_at\":")
        writer.integer(createdAt)
        writer.raw(",\"kind\":")
        writer.integer(kind)
        writer.raw(",\"tags\":")
        writer.tags(tags)
        writer.raw(",\"content\":")
        writer.string(content)
        if let sig {
            writer.raw(",\"sig\":")
            writer.hexString(sig.bytes)
        }
        writer.byte(UInt8(ascii: "}"))
        return writer.bytes
    }

    /// JSON text to a value, with JSON errors reported as event decoding errors.
    static func parse(_ json: String) throws(EventDecodingError) -> JSONValue {
        try parse(Array(json.utf8))
    }

    static func parse(_ bytes: [UInt8]) throws(EventDecodingError) -> JSONValue {
        do { return try JSONValue(parsing: bytes) } catch { throw .json(error) }
    }

    struct Decoded {
        var id: EventID
        var pubkey: PublicKey
        var createdAt: Int64
        var kind: UInt16
        var tags: [[String]]
        var content: String
        var sig: Signature?
    }

    /// Reads the event fields from a JSON object. Unknown keys are ignored and not kept.
    static func decode(_ value: JSONValue, requireSignature: Bool) throws(EventDecodingError) -> Decoded {
        guard case .object(let object) = value else { throw .notAnObject }

        func field(_ name: String) throws(EventDecodingError) -> JSONValue {
            guard let value = object[name] else { throw .missingField(name) }
            return value
        }
        func hexField(_ name: String, bytes: Int) throws(EventDecodingError) -> [UInt8] {
            guard case .string(let text) = try field(name) else { throw .wrongType(field: name, expected: "a string") }
            guard let decoded = Hex.decode(text, count: bytes) else { throw .malformedHex(field: name) }
            return decoded
        }

        let id = EventID(unchecked: try hexField("id", bytes: 32))
        let pubkeyBytes = try hexField("pubkey", bytes: 32)
        let pubkey: PublicKey
        do { pubkey = try PublicKey(bytes: pubkeyBytes) } catch { throw .invalidPublicKey }

        guard case .integer(let createdAt) = try field("created_at") else {
            throw .wrongType(field: "created_at", expected: "an integer")
        }
        guard createdAt >= 0 else { throw .negativeTimestamp }

        guard case .integer(let kindValue) = try field("kind") else { throw .kindOutOfRange }
        guard let kind = UInt16(exactly: kindValue) else { throw .kindOutOfRange }

        guard case .array(let tagValues) = try field("tags") else { throw .wrongType(field: "tags", expected: "an array") }
        var tags: [[String]] = []
        tags.reserveCapacity(tagValues.count)
        for (index, tagValue) in tagValues.enumerated() {
            guard case .array(let items) = tagValue else { throw .wrongType(field: "tags[\(index)]", expected: "an array of strings") }
            guard !items.isEmpty else { throw .emptyTag(index: index) }
            var tag: [String] = []
            tag.reserveCapacity(items.count)
            for item in items {
                guard case .string(let s) = item else { throw .wrongType(field: "tags[\(index)]", expected: "an array of strings") }
                tag.append(s)
            }
            tags.append(tag)
        }

        guard case .string(let content) = try field("content") else { throw .wrongType(field: "content", expected: "a string") }

        var sig: Signature?
        if requireSignature {
            let sigBytes = try hexField("sig", bytes: 64)
            sig = try? Signature(bytes: sigBytes)
        } else if object["sig"] != nil {
            throw .unexpectedSignature
        }
        return Decoded(id: id, pubkey: pubkey, createdAt: createdAt, kind: kind, tags: tags, content: content, sig: sig)
    }
}
