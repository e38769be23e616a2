import Crypto

/// RFC 8291 §3.3–3.4 and RFC 8188 §2.2: from the ECDH secret between the sender's and the
/// receiver's keys, the receiver's auth secret and the message's salt, the content encryption
/// key and the nonce of an `aes128gcm` message. Encryption and decryption share it, so that they
/// cannot disagree.
enum WebPushKeyDerivation {
    static func derive(
        sharedSecret: SharedSecret, authSecret: [UInt8], receiverPoint: [UInt8], senderPoint: [UInt8], salt: [UInt8]
    ) -> (key: SymmetricKey, nonce: [UInt8]) {
        // IKM = HKDF(salt: auth_secret, ikm: ecdh_secret, info: "WebPush: info" 0x00 ua_public as_public, 32)
        let keyInfo = Array("WebPush: info".utf8) + [0] + receiverPoint + senderPoint
        let inputKey = sharedSecret.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: authSecret, sharedInfo: keyInfo, outputByteCount: 32)
        // PRK = HKDF-Extract(salt, IKM); CEK and NONCE are expanded from it.
        let pseudoRandomKey = HKDF<SHA256>.extract(inputKeyMaterial: inputKey, salt: salt)
        let contentKey = HKDF<SHA256>.expand(
            pseudoRandomKey: pseudoRandomKey, info: Array("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonce = HKDF<SHA256>.expand(
            pseudoRandomKey: pseudoRandomKey, info: Array("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
        return (contentKey, nonce.withUnsafeBytes { Array($0) })
    }
}
