import Crypto
import CryptoExtras
import NostrProtocol

/// The conversation key of ../shared/vectors/nip44-rust-nostr-payloads.json, so that the seeds
/// taken from that file decrypt and the fuzzer starts from payloads that pass every check.
let conversationKey = try! ConversationKey(hex: "3e2b52a63be47d34fe0a80e34e73d436d6963bc8f39827f327057a9986c20a45")

/// NIP-44 decryption of hostile payloads. The first byte picks the mode:
/// - even: the rest is the payload text as received (length, base64, version and MAC checks);
/// - odd: the rest is a 32-byte nonce and a padded plaintext, sealed here with a valid MAC, so
///   that the fuzzer reaches what a random payload never passes: unpadding and UTF-8 checks.
/// Whatever decrypts must re-encrypt (with the same nonce) to something that decrypts the same.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    guard let mode = input.first else { return 0 }
    let rest = Array(input.dropFirst())
    if mode & 1 == 0 {
        let payload = String(decoding: rest, as: UTF8.self)
        guard let plaintext = try? NIP44.decrypt(payload, conversationKey: conversationKey) else { return 0 }
        // Decryption passed, so this is base64 of version ‖ nonce ‖ … .
        let nonce = Array(Base64.decode(payload)![1..<33])
        checkReencryption(plaintext, nonce: nonce)
    } else {
        let nonce = Array((rest.prefix(32) + repeatElement(0, count: 32)).prefix(32))
        let padded = Array(rest.dropFirst(32))
        let payload = seal(padded, nonce: nonce)
        guard let plaintext = try? NIP44.decrypt(payload, conversationKey: conversationKey) else { return 0 }
        let prefix = padded[0] == 0 && padded[1] == 0 ? 6 : 2
        guard Array(plaintext.utf8) == Array(padded[prefix..<(prefix + plaintext.utf8.count)]) else {
            fatalError("decrypted text is not the sealed plaintext")
        }
        checkReencryption(plaintext, nonce: nonce)
        // With zero padding and the classic prefix, our own encryption is the only encoding.
        let zeroPadded = padded[(prefix + plaintext.utf8.count)...].allSatisfy { $0 == 0 }
        if prefix == 2, zeroPadded {
            guard try! NIP44.encrypt(plaintext, conversationKey: conversationKey, nonce: nonce) == payload else {
                fatalError("a canonical payload does not re-encrypt to itself")
            }
        }
    }
    return 0
}

func checkReencryption(_ plaintext: String, nonce: [UInt8]) {
    guard plaintext.utf8.count <= NIP44.maxPlaintextLength else { return }
    let payload: String
    do {
        payload = try NIP44.encrypt(plaintext, conversationKey: conversationKey, nonce: nonce)
    } catch {
        fatalError("a decrypted plaintext does not encrypt: \(error)")
    }
    guard (try? NIP44.decrypt(payload, conversationKey: conversationKey)) == plaintext else {
        fatalError("re-encrypted payload does not decrypt to the same plaintext")
    }
}

/// Version 2 ‖ nonce ‖ ChaCha20(padded) ‖ HMAC-SHA256(nonce ‖ ciphertext), as NIP-44 seals, but
/// over bytes the fuzzer chose instead of a well-formed padded plaintext.
func seal(_ padded: [UInt8], nonce: [UInt8]) -> String {
    let keys = NIP44.MessageKeys(conversationKey: conversationKey, nonce: nonce)
    let ciphertext = Array(
        try! Insecure.ChaCha20CTR.encrypt(
            padded, using: SymmetricKey(data: keys.chachaKey), counter: Insecure.ChaCha20CTR.Counter(),
            nonce: Insecure.ChaCha20CTR.Nonce(data: keys.chachaNonce)))
    var hmac = HMAC<SHA256>(key: SymmetricKey(data: keys.hmacKey))
    hmac.update(data: nonce)
    hmac.update(data: ciphertext)
    return Base64.encode([2] + nonce + ciphertext + Array(hmac.finalize()))
}
