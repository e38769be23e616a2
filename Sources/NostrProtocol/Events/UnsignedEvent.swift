/// An event with its id but no signature: what one signs, and a NIP-59 rumor.
public struct UnsignedEvent: Sendable, Hashable {
    public let id: EventID
    public let pubkey: PublicKey
    public let createdAt: Int64
    public let kind: UInt16
    public let tags: [[String]]
    public let content: String

    /// Builds the event and computes its id.
    public init(pubkey: PublicKey, createdAt: Int64 = UnixTime.now(), kind: UInt16, tags: [[String]] = [], content: String) {
        self.pubkey = pubkey
        self.createdAt = createdAt
        self.kind = kind
        self.tags = tags
        self.content = content
        self.id = EventFields.computeID(pubkey: pubkey, createdAt: createdAt, kind: kind, tags: tags, content: content)
    }

    /// Parses rumor JSON: `id` required, `sig` refused. The id is not trusted: compare it with
    /// `computedID` (NIP-59 unwrapping does).
    public init(json: String) throws(EventDecodingError) {
        try self.init(jsonValue: EventFields.parse(json))
    }

    public init(jsonValue: JSONValue) throws(EventDecodingError) {
        let decoded = try EventFields.decode(jsonValue, requireSignature: false)
        id = decoded.id
        pubkey = decoded.pubkey
        createdAt = decoded.createdAt
        kind = decoded.kind
        tags = decoded.tags
        content = decoded.content
    }

    public var computedID: EventID {
        EventFields.computeID(pubkey: pubkey, createdAt: createdAt, kind: kind, tags: tags, content: content)
    }

    /// The canonical `[0,pubkey,created_at,kind,tags,content]` bytes whose SHA-256 is the id.
    public var canonicalSerialization: [UInt8] {
        EventFields.canonicalSerialization(pubkey: pubkey, createdAt: createdAt, kind: kind, tags: tags, content: content)
    }

    /// Signs with `keys`, which must belong to `pubkey`.
    public func signed(by keys: Keys, auxRand: [UInt8]? = nil) -> NostrEvent {
        precondition(keys.publicKey == pubkey, "signing key does not match the event pubkey")
        return NostrEvent(
            id: id, pubkey: pubkey, createdAt: createdAt, kind: kind, tags: tags, content: content,
            sig: keys.sign(id.bytes, auxRand: auxRand))
    }

    /// Rumor JSON (no `sig`).
    public var json: String {
        String(
            decoding: EventFields.writeObject(
                id: id, pubkey: pubkey, createdAt: createdAt, kind: kind, tags: tags, content: content, sig: nil), as: UTF8.self)
    }
}

extension Keys {
    /// Builds and signs an event authored by these keys.
    public func sign(kind: UInt16, tags: [[String]] = [], content: String, createdAt: Int64 = UnixTime.now()) -> NostrEvent {
        UnsignedEvent(pubkey: publicKey, createdAt: createdAt, kind: kind, tags: tags, content: content).signed(by: self)
    }
}
