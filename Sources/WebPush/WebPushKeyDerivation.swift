import Crypto

/// RFC 8291 §3.3–3.4 and RFC 8188 §2.2: from the ECDH secret between the sender's and the
/// receiver's keys, the receiver's auth secret and the message's salt, the content encryption
/// key and the nonce of an `aes128gcm` message. Encryption and decryption share it, so that they
/// cannot disagree.
///
/// Every output is at most one SHA-256 block long, so each HKDF step is a single HMAC: extract
/// is `HMAC(salt, input)`, expand is `HMAC(key, info ‖ 0x01)` cut to length (RFC 5869 §2). Five
/// HMACs written out cost a fraction of swift-crypto's generic `HKDF`, which converts every
/// argument on the way in and was a tenth of a message's encryption.
enum WebPushKeyDerivation {
    static func derive(
        sharedSecret: SharedSecret, authSecret: [UInt8], receiverPoint: [UInt8], senderPoint: [UInt8], salt: [UInt8]
    ) -> (key: SymmetricKey, nonce: [UInt8]) {
        // IKM = HKDF(salt: auth_secret, ikm: ecdh_secret, info: "WebPush: info" 0x00 ua_public as_public, 32)
        let secretKey = sharedSecret.withUnsafeBytes { extract(salt: authSecret, input: $0) }
        var keyInfo = keyInfoPrefix
        keyInfo.reserveCapacity(keyInfoPrefix.count + receiverPoint.count + senderPoint.count)
        keyInfo += receiverPoint
        keyInfo += senderPoint
        let inputKey = expand(secretKey, info: keyInfo, count: 32)
        // PRK = HKDF-Extract(salt, IKM); CEK and NONCE are expanded from it.
        let pseudoRandomKey = inputKey.withUnsafeBufferPointer { extract(salt: salt, input: UnsafeRawBufferPointer($0)) }
        let contentKey = expand(pseudoRandomKey, info: contentKeyInfo, count: 16)
        let nonce = expand(pseudoRandomKey, info: nonceInfo, count: 12)
        return (SymmetricKey(data: contentKey), nonce)
    }

    static let keyInfoPrefix = Array("WebPush: info".utf8) + [0]
    static let contentKeyInfo = Array("Content-Encoding: aes128gcm".utf8) + [0]
    static let nonceInfo = Array("Content-Encoding: nonce".utf8) + [0]
    /// The counter octet of HKDF-Expand's first block.
    static let firstBlock: [UInt8] = [1]

    private static func extract(salt: [UInt8], input: UnsafeRawBufferPointer) -> SymmetricKey {
        SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: input, using: SymmetricKey(data: salt)))
    }

    /// The first block of HKDF-Expand, which is all of it for `count` ≤ 32.
    private static func expand(_ key: SymmetricKey, info: [UInt8], count: Int) -> [UInt8] {
        precondition(count <= SHA256.byteCount, "one HKDF-Expand block holds 32 octets")
        var authenticator = HMAC<SHA256>(key: key)
        authenticator.update(data: info)
        authenticator.update(data: firstBlock)
        return authenticator.finalize().withUnsafeBytes { Array($0.prefix(count)) }
    }
}
