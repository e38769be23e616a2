internal import CSecp256k1

/// A BIP-340 x-only public key: 32 bytes, always a valid point (checked when created).
///
/// The parsed curve point is kept beside the bytes so that verification and ECDH do not pay for
/// a second square root.
public struct PublicKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The 32-byte x coordinate.
    public let bytes: [UInt8]
    /// The point with even Y, as libsecp256k1's full public key.
    let point: secp256k1_pubkey

    /// Reads 32 bytes; throws when they are not the x coordinate of a curve point.
    public init(bytes: [UInt8]) throws(KeyError) {
        guard bytes.count == 32 else { throw .malformed(expectedBytes: 32) }
        var compressed = [UInt8](repeating: 0x02, count: 33)
        compressed.replaceSubrange(1..., with: bytes)
        var point = secp256k1_pubkey()
        guard secp256k1_ec_pubkey_parse(Secp256k1Context.shared.pointer, &point, compressed, 33) == 1 else {
            throw .notOnCurve
        }
        self.bytes = bytes
        self.point = point
    }

    /// Reads 64 lowercase hex characters (uppercase is accepted too, for keys typed by people).
    public init(hex: some StringProtocol) throws(KeyError) {
        guard let bytes = Hex.decode(hex, count: 32, allowUppercase: true) else { throw .malformed(expectedBytes: 32) }
        try self.init(bytes: bytes)
    }

    /// Reads an `npub1…` string.
    public init(npub: String) throws(KeyError) {
        let entity: NIP19Entity
        do { entity = try NIP19.decode(npub) } catch { throw .bech32(error) }
        guard case .publicKey(let key) = entity else { throw .bech32(.wrongPrefix(expected: "npub")) }
        self = key
    }

    /// Reads hex or `npub`, whichever the text is.
    public init(parsing text: String) throws(KeyError) {
        let trimmed = text.trimmingWhitespace()
        if trimmed.hasPrefix("npub1") { try self.init(npub: trimmed) } else { try self.init(hex: trimmed) }
    }

    /// Lowercase hex, as in events and filters.
    public var hex: String { Hex.encode(bytes) }
    /// `npub1…` (NIP-19), for display only.
    public var npub: String { NIP19.encode(.publicKey(self)) }
    public var description: String { hex }

    public static func == (lhs: PublicKey, rhs: PublicKey) -> Bool { lhs.bytes == rhs.bytes }
    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }
    public static func < (lhs: PublicKey, rhs: PublicKey) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }

    /// BIP-340 verification of `signature` over `message` (Nostr signs the 32 raw id bytes).
    public func verify(_ signature: Signature, message: [UInt8]) -> Bool {
        let context = Secp256k1Context.shared.pointer
        var point = self.point
        var xonly = secp256k1_xonly_pubkey()
        guard secp256k1_xonly_pubkey_from_pubkey(context, &xonly, nil, &point) == 1 else { return false }
        return signature.bytes.withUnsafeBufferPointer { sig in
            message.withUnsafeBufferPointer { msg in
                secp256k1_schnorrsig_verify(context, sig.baseAddress!, msg.baseAddress, msg.count, &xonly) == 1
            }
        }
    }
}
