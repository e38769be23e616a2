/// A signed NIP-01 event.
///
/// Decoding checks shape only (hex lengths, integer timestamp, kind range, tags of strings);
/// call `verify()` to check that the id matches the fields and the signature is valid.
public struct NostrEvent: Sendable, Hashable {
    public let id: EventID
    public let pubkey: PublicKey
    public let createdAt: Int64
    public let kind: UInt16
    public let tags: [[String]]
    public let content: String
    public let sig: Signature

    /// Assembles an event from parts, as received; nothing is checked until `verify()`.
    public init(id: EventID, pubkey: PublicKey, createdAt: Int64, kind: UInt16, tags: [[String]], content: String, sig: Signature) {
        self.id = id
        self.pubkey = pubkey
        self.createdAt = createdAt
        self.kind = kind
        self.tags = tags
        self.content = content
        self.sig = sig
    }

    /// Parses event JSON. Unknown keys are ignored and not kept.
    public init(json: String) throws(EventDecodingError) {
        if let event = EventReader.event(json) {
            self = event
            return
        }
        try self.init(jsonValue: EventFields.parse(json))
    }

    /// Parses event JSON given as bytes, which need not be valid UTF-8: a string that is not is
    /// refused, never repaired.
    init(jsonBytes json: [UInt8]) throws(EventDecodingError) {
        if let event = EventReader.event(json) {
            self = event
            return
        }
        try self.init(jsonValue: EventFields.parse(json))
    }

    public init(jsonValue: JSONValue) throws(EventDecodingError) {
        let decoded = try EventFields.decode(jsonValue, requireSignature: true)
        guard let sig = decoded.sig else { throw .malformedHex(field: "sig") }
        self.init(
            id: decoded.id, pubkey: decoded.pubkey, createdAt: decoded.createdAt, kind: decoded.kind,
            tags: decoded.tags, content: decoded.content, sig: sig)
    }

    /// The id recomputed from the fields.
    public var computedID: EventID {
        EventFields.computeID(pubkey: pubkey, createdAt: createdAt, kind: kind, tags: tags, content: content)
    }

    /// Checks the id against the fields, then the BIP-340 signature over the id. Both are needed:
    /// a valid signature over a stale id says nothing about the content.
    public func verify() throws(EventVerificationError) {
        try verifyID()
        try verifySignature()
    }

    /// The first half of `verify`: the id is the hash of the fields.
    public func verifyID() throws(EventVerificationError) {
        guard computedID == id else { throw .idMismatch }
    }

    /// The second half of `verify`: the BIP-340 signature over the id. Says something about the
    /// content only once `verifyID` passed.
    public func verifySignature() throws(EventVerificationError) {
        guard pubkey.verify(sig, message: id.bytes) else { throw .invalidSignature }
    }

    public var isValid: Bool { (try? verify()) != nil }

    /// Compact JSON in rust-nostr's key order.
    public var json: String { String(decoding: jsonBytes, as: UTF8.self) }

    public var jsonBytes: [UInt8] {
        EventFields.writeObject(id: id, pubkey: pubkey, createdAt: createdAt, kind: kind, tags: tags, content: content, sig: sig)
    }

    /// Values at position 1 of every tag named `name` (for example all `p` recipients).
    public func tagValues(_ name: String) -> [String] {
        tags.compactMap { $0.first == name && $0.count > 1 ? $0[1] : nil }
    }

    /// The first tag named `name`.
    public func firstTag(_ name: String) -> [String]? { tags.first { $0.first == name } }

    /// Position 1 of the first tag named `name` (`["method", "POST"]` → `"POST"`).
    public func firstTagValue(_ name: String) -> String? { firstTag(name)?.dropFirst().first }
}
