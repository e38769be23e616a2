public import Crypto

/// Encrypts a push message for one subscription as RFC 8291 requires: the `aes128gcm` content
/// coding of RFC 8188 with a single record, keyed by ECDH between a fresh P-256 key of the
/// sender's and the subscription's `p256dh`, and the subscription's `auth` secret. The body is
/// the coding's header (salt, record size, the sender's public key as key id) then the record.
public enum WebPushEncryption {
    /// The record size written in the header: what every push service must accept.
    public static let recordSize = 4096
    /// Salt 16, record size 4, key id length 1, key id 65.
    public static let headerLength = 86
    /// The longest plaintext (with its padding) a 4096-byte body carries: less the header, the
    /// record's delimiter octet and its 16-byte tag (RFC 8291 §4).
    public static let maxPlaintextLength = recordSize - headerLength - 1 - 16

    /// Encrypts `plaintext`, followed by `padding` zero octets inside the record (which hide its
    /// length), with a fresh key and salt.
    public static func encrypt(
        _ plaintext: some Collection<UInt8>, for keys: WebPushSubscriptionKeys, padding: Int = 0
    ) throws(WebPushEncryptionError) -> [UInt8] {
        var salt = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in salt.indices { salt[index] = generator.next() }
        return try encrypt(plaintext, for: keys, senderKey: freshSenderKey(using: &generator), salt: salt, padding: padding)
    }

    /// A new sender key: a uniformly random scalar in 1..<n (n the group order), drawn until one
    /// is in range (a draw of 32 random octets misses with odds of about 2⁻³²). Not
    /// `P256.KeyAgreement.PrivateKey()`, which proves each new key with a FIPS pair-wise test
    /// (another multiplication by the generator, then an ECDSA signature made and verified) and by
    /// default draws again until the key has a compact form, about two keys a key: more work than
    /// the ECDH the key is made for, guarding against a faulty module rather than anything a
    /// message's secrecy rests on. The range is checked here, in constant time, whatever the
    /// crypto backend would refuse; 64 misses in a row mean a broken generator, and stop the
    /// process rather than send under a key it chose.
    public static func freshSenderKey(using generator: inout some RandomNumberGenerator) -> P256.KeyAgreement.PrivateKey {
        var scalar = [UInt8](repeating: 0, count: 32)
        defer { for index in scalar.indices { scalar[index] = 0 } }
        for _ in 0..<64 {
            for word in 0..<4 {
                let random = generator.next()
                for octet in 0..<8 { scalar[word * 8 + octet] = UInt8(truncatingIfNeeded: random >> (octet * 8)) }
            }
            if isInRange(scalar), let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: scalar) { return key }
        }
        preconditionFailure("the random number generator gave 64 scalars out of 1..<n in a row")
    }

    /// P-256's group order n, big-endian.
    static let groupOrder: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
    ]

    /// Whether the 32 big-endian octets are in 1..<n, reading every octet whatever they hold: the
    /// borrow of `scalar − n` says below n, the OR of the octets says not zero. (Whether a draw
    /// was refused may show; the refused draw is thrown away.)
    package static func isInRange(_ scalar: [UInt8]) -> Bool {
        var borrow: UInt16 = 0
        var any: UInt8 = 0
        for index in stride(from: 31, through: 0, by: -1) {
            let difference = UInt16(scalar[index]) &- UInt16(groupOrder[index]) &- borrow
            borrow = (difference >> 8) & 1
            any |= scalar[index]
        }
        return borrow == 1 && any != 0
    }

    /// The same with the sender's key and the salt given: the seam that reproduces RFC 8291's
    /// worked example. Never reuse a key and salt for two messages.
    public static func encrypt(
        _ plaintext: some Collection<UInt8>, for keys: WebPushSubscriptionKeys, senderKey: P256.KeyAgreement.PrivateKey,
        salt: [UInt8], padding: Int = 0
    ) throws(WebPushEncryptionError) -> [UInt8] {
        guard salt.count == 16 else { throw .badSalt }
        guard padding >= 0, plaintext.count + padding <= maxPlaintextLength else {
            throw .tooLong(plaintext.count + max(padding, 0), limit: maxPlaintextLength)
        }
        let senderPoint = Array(senderKey.publicKey.x963Representation)
        let receiverPoint = keys.receiverPoint
        guard let shared = try? senderKey.sharedSecretFromKeyAgreement(with: keys.receiverKey) else { throw .keyAgreementFailed }
        let (key, nonce) = WebPushKeyDerivation.derive(
            sharedSecret: shared, authSecret: keys.authSecret, receiverPoint: receiverPoint, senderPoint: senderPoint, salt: salt)

        // The only record is the last: its delimiter is 2 (RFC 8188 §2), then the padding.
        var record = Array(plaintext)
        record.reserveCapacity(record.count + 1 + padding)
        record.append(2)
        record.append(contentsOf: repeatElement(0, count: padding))
        let sealed: AES.GCM.SealedBox
        do {
            sealed = try AES.GCM.seal(record, using: key, nonce: AES.GCM.Nonce(data: nonce))
        } catch {
            throw .sealFailed
        }

        var body = salt
        body.reserveCapacity(headerLength + record.count + 16)
        let size = UInt32(recordSize)
        body += [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)]
        body.append(UInt8(senderPoint.count))
        body += senderPoint
        body += sealed.ciphertext
        body += sealed.tag
        return body
    }
}

public enum WebPushEncryptionError: Error, Equatable, CustomStringConvertible {
    case tooLong(Int, limit: Int)
    case badSalt
    case keyAgreementFailed
    case sealFailed

    public var description: String {
        switch self {
        case .tooLong(let length, let limit): "a Web Push message carries at most \(limit) octets of plaintext and padding, not \(length)"
        case .badSalt: "the salt must be 16 octets"
        case .keyAgreementFailed: "ECDH with the subscription's key failed"
        case .sealFailed: "AES-GCM refused to seal the record"
        }
    }
}
