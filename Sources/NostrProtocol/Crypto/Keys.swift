internal import CSecp256k1

/// A secret key with its public key and the libsecp256k1 keypair precomputed for signing.
public struct Keys: Sendable, CustomStringConvertible {
    public let secretKey: SecretKey
    public let publicKey: PublicKey
    /// `secp256k1_keypair` (96 bytes, contains the secret): kept in wiped storage.
    private let keypair: SecureBytes

    public init(secretKey: SecretKey) {
        let context = Secp256k1Context.shared.pointer
        var pair = secp256k1_keypair()
        let created = secretKey.withUnsafeBytes {
            secp256k1_keypair_create(context, &pair, $0.bindMemory(to: UInt8.self).baseAddress!)
        }
        precondition(created == 1, "a validated secret key always makes a keypair")
        var xonly = secp256k1_xonly_pubkey()
        precondition(secp256k1_keypair_xonly_pub(context, &xonly, nil, &pair) == 1)
        var x = [UInt8](repeating: 0, count: 32)
        precondition(secp256k1_xonly_pubkey_serialize(context, &x, &xonly) == 1)
        self.secretKey = secretKey
        // The x coordinate of a keypair's public key is on the curve by construction.
        self.publicKey = try! PublicKey(bytes: x)
        self.keypair = withUnsafeBytes(of: &pair) { raw in SecureBytes(count: raw.count) { $0.copyMemory(from: raw) } }
        withUnsafeMutableBytes(of: &pair) { SecureBytes.wipe($0) }
    }

    /// Fresh random keys.
    public static func generate() -> Keys { Keys(secretKey: .generate()) }

    /// BIP-340 signature over `message` (32 bytes for Nostr ids) with fresh `auxRand`
    /// unless one is given (tests use fixed aux randomness to reproduce vectors).
    public func sign(_ message: [UInt8], auxRand: [UInt8]? = nil) -> Signature {
        let context = Secp256k1Context.shared.pointer
        let aux = auxRand ?? SecureRandom.bytes(32)
        precondition(aux.count == 32, "aux_rand is 32 bytes")
        var signature = [UInt8](repeating: 0, count: 64)
        var params = secp256k1_schnorrsig_extraparams()
        // SECP256K1_SCHNORRSIG_EXTRAPARAMS_MAGIC: a C macro of an array initializer, so spelled out.
        params.magic = (0xda, 0x6f, 0xb3, 0x8c)
        let signed = keypair.withUnsafeBytes { pair in
            aux.withUnsafeBufferPointer { auxBuffer in
                message.withUnsafeBufferPointer { msg in
                    params.ndata = UnsafeMutableRawPointer(mutating: auxBuffer.baseAddress)
                    return secp256k1_schnorrsig_sign_custom(
                        context, &signature, msg.baseAddress, msg.count,
                        pair.baseAddress!.assumingMemoryBound(to: secp256k1_keypair.self), &params)
                }
            }
        }
        precondition(signed == 1, "schnorr signing with a valid keypair cannot fail")
        return try! Signature(bytes: signature)
    }

    public var description: String { "Keys(\(publicKey.hex))" }
}
