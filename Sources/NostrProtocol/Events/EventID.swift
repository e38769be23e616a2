/// A NIP-01 event id: SHA-256 of the canonical serialization, 32 bytes.
public struct EventID: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) throws(KeyError) {
        guard bytes.count == 32 else { throw .malformed(expectedBytes: 32) }
        self.bytes = bytes
    }

    /// 64 lowercase hex characters.
    public init(hex: some StringProtocol) throws(KeyError) {
        guard let bytes = Hex.decode(hex, count: 32) else { throw .malformed(expectedBytes: 32) }
        self.bytes = bytes
    }

    init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    public var hex: String { Hex.encode(bytes) }
    public var description: String { hex }
    /// `note1…` (NIP-19), for display.
    public var note: String { NIP19.encode(.note(self)) }

    /// Lexical order of the hex form, which equals byte order (NIP-01 tie-breaks use it).
    public static func < (lhs: EventID, rhs: EventID) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }
}
