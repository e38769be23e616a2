/// A 64-byte BIP-340 Schnorr signature (R.x ‖ s).
public struct Signature: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) throws(KeyError) {
        guard bytes.count == 64 else { throw .malformed(expectedBytes: 64) }
        self.bytes = bytes
    }

    public init(hex: some StringProtocol) throws(KeyError) {
        guard let bytes = Hex.decode(hex, count: 64) else { throw .malformed(expectedBytes: 64) }
        self.bytes = bytes
    }

    public var hex: String { Hex.encode(bytes) }
    public var description: String { hex }
}
