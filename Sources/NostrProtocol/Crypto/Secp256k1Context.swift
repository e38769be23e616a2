internal import CSecp256k1

/// The process-wide libsecp256k1 context.
///
/// libsecp256k1 allows concurrent use of one context for every operation that takes it as
/// `const` (signing, verification, ECDH, key parsing). The only mutating call,
/// `secp256k1_context_randomize`, runs once here before the context is published, so sharing
/// the pointer across threads is safe; that is why this type is `@unchecked Sendable`.
final class Secp256k1Context: @unchecked Sendable {
    static let shared = Secp256k1Context()

    let pointer: OpaquePointer

    private init() {
        guard let context = secp256k1_context_create(UInt32(SECP256K1_CONTEXT_NONE)) else {
            fatalError("libsecp256k1: context creation failed")
        }
        // Blinding against side channels for signing and key generation.
        var seed = SecureRandom.bytes(32)
        let randomized = secp256k1_context_randomize(context, &seed)
        precondition(randomized == 1, "libsecp256k1: context randomization failed")
        SecureBytes.zero(&seed)
        pointer = context
    }
}
