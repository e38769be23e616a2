import Crypto
import CryptoExtras

/// NIP-44 version 2 encryption (ChaCha20 + HMAC-SHA256 with padding).
///
/// Encryption is limited to 65535 bytes (the classic 2-byte length prefix every peer reads).
/// Decryption also accepts the extended prefix (`00 00 ‖ u32 length`) up to
/// `maxDecryptedLength` bytes.
public enum NIP44 {
    public static let maxPlaintextLength = 65535
    /// Our own cap for extended-prefix payloads (the spec lets implementations pick one).
    public static let defaultMaxDecryptedLength = 1 << 24

    /// Encrypts `plaintext`. `nonce` is for test vectors only; leave it nil.
    public static func encrypt(_ plaintext: String, conversationKey: ConversationKey, nonce: [UInt8]? = nil) throws(NIP44Error) -> String {
        let plain = Array(plaintext.utf8)
        guard (1...maxPlaintextLength).contains(plain.count) else { throw .invalidPlaintextLength }
        let nonce = nonce ?? SecureRandom.bytes(32)
        guard nonce.count == 32 else { throw .invalidNonce }
        let keys = MessageKeys(conversationKey: conversationKey, nonce: nonce)

        var padded = [UInt8]()
        let paddedLength = calcPaddedLength(plain.count)
        padded.reserveCapacity(2 + paddedLength)
        padded.append(UInt8(plain.count >> 8))
        padded.append(UInt8(plain.count & 0xFF))
        padded.append(contentsOf: plain)
        padded.append(contentsOf: repeatElement(0, count: paddedLength - plain.count))

        let ciphertext = keys.chacha20(padded)
        let mac = keys.mac(nonce: nonce, ciphertext: ciphertext)
        var payload = [UInt8]()
        payload.reserveCapacity(1 + 32 + ciphertext.count + 32)
        payload.append(2)
        payload.append(contentsOf: nonce)
        payload.append(contentsOf: ciphertext)
        payload.append(contentsOf: mac)
        return Base64.encode(payload)
    }

    /// Derives the conversation key and encrypts.
    public static func encrypt(_ plaintext: String, secretKey: SecretKey, publicKey: PublicKey) throws(NIP44Error) -> String {
        try encrypt(plaintext, conversationKey: ConversationKey(secretKey: secretKey, publicKey: publicKey))
    }

    /// Decrypts, checking in order: version, payload length, base64, version byte, MAC (constant
    /// time, before any decryption), padding, UTF-8.
    public static func decrypt(_ payload: String, conversationKey: ConversationKey, maxDecryptedLength: Int = defaultMaxDecryptedLength)
        throws(NIP44Error) -> String
    {
        let utf8 = payload.utf8
        guard let first = utf8.first, first != UInt8(ascii: "#") else { throw .unsupportedVersion }
        // The smallest payload is 1 + 32 + (2 + 32) + 32 = 99 bytes = 132 base64 characters.
        let maxBase64 = (1 + 32 + 6 + calcPaddedLength(max(maxDecryptedLength, 1)) + 32 + 2) / 3 * 4
        guard utf8.count >= 132, utf8.count <= maxBase64 else { throw .invalidPayloadLength }
        guard let data = Base64.decode(payload) else { throw .invalidBase64 }
        guard data.count >= 99 else { throw .invalidPayloadLength }
        guard data[0] == 2 else { throw .unsupportedVersion }

        let nonce = Array(data[1..<33])
        let ciphertext = data[33..<(data.count - 32)]
        let mac = data[(data.count - 32)...]
        let keys = MessageKeys(conversationKey: conversationKey, nonce: nonce)
        guard keys.verifyMAC(mac, nonce: nonce, ciphertext: ciphertext) else { throw .invalidMAC }
        let padded = keys.chacha20(ciphertext)
        let plain = try unpad(padded, maxLength: maxDecryptedLength)
        guard let text = UTF8Text.string(validating: plain) else { throw .invalidUTF8 }
        return text
    }

    /// Derives the conversation key and decrypts.
    public static func decrypt(_ payload: String, secretKey: SecretKey, publicKey: PublicKey) throws(NIP44Error) -> String {
        try decrypt(payload, conversationKey: ConversationKey(secretKey: secretKey, publicKey: publicKey))
    }

    /// The padded plaintext size for `length` bytes (without the length prefix).
    public static func calcPaddedLength(_ length: Int) -> Int {
        guard length > 32 else { return 32 }
        let nextPower = 1 << (Int.bitWidth - (length - 1).leadingZeroBitCount)
        let chunk = nextPower <= 256 ? 32 : nextPower / 8
        return chunk * ((length - 1) / chunk + 1)
    }

    static func unpad(_ padded: [UInt8], maxLength: Int) throws(NIP44Error) -> ArraySlice<UInt8> {
        guard padded.count >= 2 else { throw .invalidPadding }
        var length = Int(padded[0]) << 8 | Int(padded[1])
        var prefix = 2
        if length == 0 {
            // Extended prefix: 00 00 ‖ u32_be(n), only for n ≥ 65536.
            guard padded.count >= 6 else { throw .invalidPadding }
            length = Int(padded[2]) << 24 | Int(padded[3]) << 16 | Int(padded[4]) << 8 | Int(padded[5])
            prefix = 6
            guard length > maxPlaintextLength else { throw .invalidPadding }
        }
        guard length >= 1, length <= maxLength, padded.count == prefix + calcPaddedLength(length) else { throw .invalidPadding }
        return padded[prefix..<(prefix + length)]
    }

    /// Per-message keys: HKDF-Expand(conversation key, info = nonce, 76 bytes).
    public struct MessageKeys {
        public let chachaKey: [UInt8]
        public let chachaNonce: [UInt8]
        public let hmacKey: [UInt8]

        public init(conversationKey: ConversationKey, nonce: [UInt8]) {
            let okm = HKDF<SHA256>.expand(pseudoRandomKey: conversationKey.symmetricKey, info: nonce, outputByteCount: 76)
            let bytes = okm.withUnsafeBytes { Array($0) }
            chachaKey = Array(bytes[0..<32])
            chachaNonce = Array(bytes[32..<44])
            hmacKey = Array(bytes[44..<76])
        }

        func chacha20(_ input: some Collection<UInt8>) -> [UInt8] {
            // A 12-byte nonce and a 32-byte key are always valid, so this cannot throw.
            let output = try! Insecure.ChaCha20CTR.encrypt(
                Array(input), using: SymmetricKey(data: chachaKey),
                counter: Insecure.ChaCha20CTR.Counter(), nonce: Insecure.ChaCha20CTR.Nonce(data: chachaNonce))
            return Array(output)
        }

        func mac(nonce: [UInt8], ciphertext: some Collection<UInt8>) -> [UInt8] {
            var hmac = HMAC<SHA256>(key: SymmetricKey(data: hmacKey))
            hmac.update(data: nonce)
            hmac.update(data: Array(ciphertext))
            return Array(hmac.finalize())
        }

        func verifyMAC(_ expected: some Collection<UInt8>, nonce: [UInt8], ciphertext: some Collection<UInt8>) -> Bool {
            let actual = mac(nonce: nonce, ciphertext: ciphertext)
            guard expected.count == actual.count else { return false }
            // Constant time: accumulate differences over every byte.
            var difference: UInt8 = 0
            for (a, b) in zip(actual, expected) { difference |= a ^ b }
            return difference == 0
        }
    }
}
