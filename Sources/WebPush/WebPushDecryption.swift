public import Crypto

/// The receiving side of `WebPushEncryption`: what a browser does with a push message, and what
/// the Web Push sandbox does to record what a sender sent. Reads one `aes128gcm` record (RFC 8188)
/// keyed as RFC 8291 says, and refuses anything else with a reason.
public enum WebPushDecryption {
    public static func decrypt(
        _ body: [UInt8], receiverKey: P256.KeyAgreement.PrivateKey, authSecret: [UInt8]
    ) throws(WebPushDecryptionError) -> [UInt8] {
        guard body.count >= 21 else { throw .truncatedHeader }
        let salt = Array(body[0..<16])
        let recordSize = body[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let keyIDLength = Int(body[20])
        guard keyIDLength == WebPushSubscriptionKeys.pointLength else { throw .badKeyID }
        let recordStart = 21 + keyIDLength
        guard body.count > recordStart else { throw .truncatedHeader }
        let senderPoint = Array(body[21..<recordStart])
        guard let senderKey = try? P256.KeyAgreement.PublicKey(x963Representation: senderPoint) else { throw .badKeyID }
        let record = body[recordStart...]
        // RFC 8291 §4: one record, which the record size must hold.
        guard recordSize >= 18, record.count <= recordSize else { throw .notOneRecord }
        guard record.count > 16 else { throw .truncatedRecord }

        guard let shared = try? receiverKey.sharedSecretFromKeyAgreement(with: senderKey) else { throw .badKeyID }
        let (key, nonce) = WebPushKeyDerivation.derive(
            sharedSecret: shared, authSecret: authSecret, receiverPoint: Array(receiverKey.publicKey.x963Representation),
            senderPoint: senderPoint, salt: salt)
        let opened: [UInt8]
        do {
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: nonce), ciphertext: record.dropLast(16), tag: record.suffix(16))
            opened = Array(try AES.GCM.open(box, using: key))
        } catch {
            throw .authenticationFailed
        }
        // Padding is zeros after the delimiter; the last record's delimiter is 2.
        guard let delimiter = opened.lastIndex(where: { $0 != 0 }), opened[delimiter] == 2 else { throw .badPadding }
        return Array(opened[..<delimiter])
    }
}

public enum WebPushDecryptionError: Error, Equatable, CustomStringConvertible {
    case truncatedHeader
    case badKeyID
    case notOneRecord
    case truncatedRecord
    case authenticationFailed
    case badPadding

    public var description: String {
        switch self {
        case .truncatedHeader: "the body is shorter than an aes128gcm header"
        case .badKeyID: "the key id is not the sender's 65-byte P-256 public key"
        case .notOneRecord: "the body is not a single record of its record size"
        case .truncatedRecord: "the record is shorter than its tag"
        case .authenticationFailed: "the record does not decrypt with the subscription's keys"
        case .badPadding: "the record does not end in the last-record delimiter and zero padding"
        }
    }
}
