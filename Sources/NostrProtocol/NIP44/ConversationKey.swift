internal import CSecp256k1
import Crypto

/// The NIP-44 v2 conversation key: HKDF-Extract(salt "nip44-v2", IKM = unhashed x of a·B).
/// Symmetric between the two parties; secret, so held in wiped storage.
public struct ConversationKey: Sendable {
    let storage: SecureBytes

    /// Derives the key for `secretKey` and the peer's `publicKey`.
    public init(secretKey: SecretKey, publicKey: PublicKey) {
        var shared = Self.sharedX(secretKey, publicKey)
        defer { SecureBytes.zero(&shared) }
        let prk = HMAC<SHA256>.authenticationCode(for: shared, using: SymmetricKey(data: Array("nip44-v2".utf8)))
        storage = prk.withUnsafeBytes { raw in SecureBytes(count: 32) { $0.copyMemory(from: raw) } }
    }

    /// A key given directly (test vectors).
    public init(bytes: [UInt8]) throws(NIP44Error) {
        guard bytes.count == 32 else { throw .invalidSecretKey }
        storage = SecureBytes(bytes)
    }

    public init(hex: String) throws(NIP44Error) {
        guard let bytes = Hex.decode(hex, count: 32, allowUppercase: true) else { throw .invalidSecretKey }
        try self.init(bytes: bytes)
    }

    /// Raw key bytes (tests and vector checks only).
    public func exportBytes() -> [UInt8] { storage.bytes }

    var symmetricKey: SymmetricKey { storage.withUnsafeBytes { SymmetricKey(data: $0) } }

    /// ECDH returning the 32-byte x coordinate of secret·P. libsecp256k1's default ECDH hashes
    /// the compressed point, which is wrong for NIP-44, so a custom "hash" copies x out.
    static func sharedX(_ secretKey: SecretKey, _ publicKey: PublicKey) -> [UInt8] {
        var point = publicKey.point
        var output = [UInt8](repeating: 0, count: 32)
        let copyX: secp256k1_ecdh_hash_function = { output, x32, _, _ in
            guard let output, let x32 else { return 0 }
            output.update(from: x32, count: 32)
            return 1
        }
        let result = secretKey.withUnsafeBytes { secret in
            secp256k1_ecdh(Secp256k1Context.shared.pointer, &output, &point, secret.bindMemory(to: UInt8.self).baseAddress!, copyX, nil)
        }
        // Both inputs were validated when constructed; ECDH cannot fail on them.
        precondition(result == 1, "ECDH with validated keys failed")
        return output
    }
}
