import Crypto
import CryptoExtras
import NostrProtocol
import Testing

@Suite struct NIP44Tests {
    /// Embedded from nip44.vectors.json (valid.encrypt_decrypt[0]).
    @Test func embeddedEncryptVector() throws {
        let sec1 = try SecretKey(hex: "0000000000000000000000000000000000000000000000000000000000000001")
        let sec2 = try SecretKey(hex: "0000000000000000000000000000000000000000000000000000000000000002")
        let key = ConversationKey(secretKey: sec1, publicKey: sec2.publicKey)
        #expect(Hex.encode(key.exportBytes()) == "c41c775356fd92eadc63ff5a0dc1da211b268cbea22316767095b2871ea1412d")
        let reverse = ConversationKey(secretKey: sec2, publicKey: sec1.publicKey)
        #expect(reverse.exportBytes() == key.exportBytes())
        let nonce = hexBytes("0000000000000000000000000000000000000000000000000000000000000001")
        let payload = try NIP44.encrypt("a", conversationKey: key, nonce: nonce)
        #expect(
            payload
                == "AgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAABee0G5VSK0/9YypIObAtDKfYEAjD35uVkHyB0F4DwrcNaCXlCWZKaArsGrY6M9wnuTMxWfp1RTN9Xga8no+kF5Vsb"
        )
        #expect(try NIP44.decrypt(payload, conversationKey: key) == "a")
    }

    @Test(arguments: [
        (16, 32), (32, 32), (33, 64), (37, 64), (45, 64), (49, 64), (64, 64), (65, 96), (100, 128), (111, 128),
        (200, 224), (250, 256), (320, 320), (383, 384), (384, 384), (400, 448), (500, 512), (515, 640),
        (700, 768), (800, 896), (900, 1024), (1020, 1024), (65536, 65536), (65537, 81920),
    ])
    func paddedLength(length: Int, padded: Int) {
        #expect(NIP44.calcPaddedLength(length) == padded)
    }

    @Test func roundTripsMultibyteText() throws {
        let alice = Keys.generate(), bob = Keys.generate()
        let message = "héllo 🌍 \u{0} \n" + String(repeating: "x", count: 1000)
        let payload = try NIP44.encrypt(message, secretKey: alice.secretKey, publicKey: bob.publicKey)
        #expect(try NIP44.decrypt(payload, secretKey: bob.secretKey, publicKey: alice.publicKey) == message)
    }

    @Test func encryptLimits() throws {
        let key = try ConversationKey(hex: String(repeating: "11", count: 32))
        #expect(throws: NIP44Error.invalidPlaintextLength) { try NIP44.encrypt("", conversationKey: key) }
        #expect(throws: NIP44Error.invalidPlaintextLength) { try NIP44.encrypt(String(repeating: "a", count: 65536), conversationKey: key) }
        let largest = try NIP44.encrypt(String(repeating: "a", count: 65535), conversationKey: key)
        #expect(try NIP44.decrypt(largest, conversationKey: key).utf8.count == 65535)
    }

    @Test func rejectsTamperingBeforeDecrypting() throws {
        let key = try ConversationKey(hex: String(repeating: "22", count: 32))
        let payload = try NIP44.encrypt("secret", conversationKey: key)
        var bytes = Base64.decode(payload)!
        bytes[40] ^= 1 // ciphertext
        #expect(throws: NIP44Error.invalidMAC) { try NIP44.decrypt(Base64.encode(bytes), conversationKey: key) }
        bytes[40] ^= 1
        bytes[bytes.count - 1] ^= 1 // MAC
        #expect(throws: NIP44Error.invalidMAC) { try NIP44.decrypt(Base64.encode(bytes), conversationKey: key) }
        bytes[bytes.count - 1] ^= 1
        bytes[0] = 1
        #expect(throws: NIP44Error.unsupportedVersion) { try NIP44.decrypt(Base64.encode(bytes), conversationKey: key) }
        #expect(throws: NIP44Error.unsupportedVersion) { try NIP44.decrypt("#" + payload.dropFirst(), conversationKey: key) }
        #expect(throws: NIP44Error.unsupportedVersion) { try NIP44.decrypt("", conversationKey: key) }
        #expect(throws: NIP44Error.invalidPayloadLength) { try NIP44.decrypt(String(payload.prefix(100)), conversationKey: key) }
        #expect(throws: NIP44Error.invalidBase64) { try NIP44.decrypt(String(payload.dropLast(4)) + "!!!!", conversationKey: key) }
        let wrongKey = try ConversationKey(hex: String(repeating: "23", count: 32))
        #expect(throws: NIP44Error.invalidMAC) { try NIP44.decrypt(payload, conversationKey: wrongKey) }
    }

    /// Builds a payload whose padding is wrong but whose MAC is right, to reach the unpad checks.
    @Test func rejectsBadPaddingBehindAValidMAC() throws {
        let key = try ConversationKey(hex: String(repeating: "33", count: 32))
        let nonce = [UInt8](repeating: 7, count: 32)
        let keys = NIP44.MessageKeys(conversationKey: key, nonce: nonce)
        func forge(_ padded: [UInt8]) throws -> String {
            let ciphertext = Array(
                try Insecure.ChaCha20CTR.encrypt(
                    padded, using: SymmetricKey(data: keys.chachaKey),
                    nonce: Insecure.ChaCha20CTR.Nonce(data: keys.chachaNonce)))
            let mac = Array(HMAC<SHA256>.authenticationCode(for: nonce + ciphertext, using: SymmetricKey(data: keys.hmacKey)))
            return Base64.encode([2] + nonce + ciphertext + mac)
        }
        // Claimed length 40 but only 32 bytes of room.
        #expect(throws: NIP44Error.invalidPadding) {
            try NIP44.decrypt(try forge([0, 40] + [UInt8](repeating: 0x61, count: 32)), conversationKey: key)
        }
        // Length 0 (classic) with no room for an extended prefix length ≥ 65536.
        #expect(throws: NIP44Error.invalidPadding) {
            try NIP44.decrypt(try forge([0, 0] + [UInt8](repeating: 0x61, count: 32)), conversationKey: key)
        }
        // Right length, invalid UTF-8.
        #expect(throws: NIP44Error.invalidUTF8) {
            try NIP44.decrypt(try forge([0, 1, 0xff] + [UInt8](repeating: 0, count: 31)), conversationKey: key)
        }
    }

    @Test(.enabled(if: Vectors.available)) func officialVectors() throws {
        let v2 = try Vectors.json("nip44.vectors.json")["v2"]!
        let valid = v2["valid"]!, invalid = v2["invalid"]!

        for vector in valid["get_conversation_key"]!.array {
            let key = ConversationKey(
                secretKey: try SecretKey(hex: vector["sec1"]!.string), publicKey: try PublicKey(hex: vector["pub2"]!.string))
            #expect(Hex.encode(key.exportBytes()) == vector["conversation_key"]!.string)
        }
        let messageKeys = valid["get_message_keys"]!
        let conversation = try ConversationKey(hex: messageKeys["conversation_key"]!.string)
        for vector in messageKeys["keys"]!.array {
            let keys = NIP44.MessageKeys(conversationKey: conversation, nonce: hexBytes(vector["nonce"]!.string))
            #expect(Hex.encode(keys.chachaKey) == vector["chacha_key"]!.string)
            #expect(Hex.encode(keys.chachaNonce) == vector["chacha_nonce"]!.string)
            #expect(Hex.encode(keys.hmacKey) == vector["hmac_key"]!.string)
        }
        for pair in valid["calc_padded_len"]!.array {
            #expect(NIP44.calcPaddedLength(Int(pair.array[0].int)) == Int(pair.array[1].int))
        }
        for vector in valid["encrypt_decrypt"]!.array {
            let sec1 = try SecretKey(hex: vector["sec1"]!.string), sec2 = try SecretKey(hex: vector["sec2"]!.string)
            let key = ConversationKey(secretKey: sec1, publicKey: sec2.publicKey)
            #expect(Hex.encode(key.exportBytes()) == vector["conversation_key"]!.string)
            let payload = try NIP44.encrypt(vector["plaintext"]!.string, conversationKey: key, nonce: hexBytes(vector["nonce"]!.string))
            #expect(payload == vector["payload"]!.string)
            #expect(try NIP44.decrypt(vector["payload"]!.string, secretKey: sec2, publicKey: sec1.publicKey) == vector["plaintext"]!.string)
        }
        for vector in valid["encrypt_decrypt_long_msg"]!.array {
            let key = try ConversationKey(hex: vector["conversation_key"]!.string)
            let plaintext = String(repeating: vector["pattern"]!.string, count: Int(vector["repeat"]!.int))
            #expect(SHA256.hash(data: Array(plaintext.utf8)).hexString == vector["plaintext_sha256"]!.string)
            let payload = try NIP44.encrypt(plaintext, conversationKey: key, nonce: hexBytes(vector["nonce"]!.string))
            #expect(SHA256.hash(data: Array(payload.utf8)).hexString == vector["payload_sha256"]!.string)
            #expect(try NIP44.decrypt(payload, conversationKey: key) == plaintext)
        }

        // Classic-format encrypt limits: 0 and anything over 65535 are refused.
        for length in invalid["encrypt_msg_lengths"]!.array.map({ Int($0.int) }) where length <= 100_000 {
            let key = try ConversationKey(hex: String(repeating: "44", count: 32))
            #expect(throws: NIP44Error.invalidPlaintextLength) {
                try NIP44.encrypt(String(repeating: "a", count: length), conversationKey: key)
            }
        }
        for vector in invalid["get_conversation_key"]!.array {
            let note = vector["note"]!.string
            let secret = try? SecretKey(hex: vector["sec1"]!.string)
            let pub = try? PublicKey(hex: vector["pub2"]!.string)
            #expect(secret == nil || pub == nil, "\(note)")
        }
        for vector in invalid["decrypt"]!.array {
            let key = try ConversationKey(hex: vector["conversation_key"]!.string)
            #expect(throws: NIP44Error.self, "\(vector["note"]!.string)") {
                try NIP44.decrypt(vector["payload"]!.string, conversationKey: key)
            }
        }
    }

    @Test(.enabled(if: Vectors.available)) func extendedLengthPrefix() throws {
        for vector in try Vectors.json("nip44-extended-prefix.json")["encrypt_decrypt_long_msg_extended"]!.array {
            let key = try ConversationKey(hex: vector["conversation_key"]!.string)
            let length = Int(vector["repeat"]!.int)
            let plaintext = String(repeating: vector["pattern"]!.string, count: length)
            let nonce = hexBytes(vector["nonce"]!.string)
            let payload = try Self.encryptAnyLength(plaintext, key: key, nonce: nonce)
            #expect(payload.utf8.count == Int(vector["payload_b64_length"]!.int))
            #expect(SHA256.hash(data: Array(payload.utf8)).hexString == vector["payload_sha256"]!.string)
            #expect(try NIP44.decrypt(payload, conversationKey: key) == plaintext, "length \(length)")
        }
    }

    /// Reference encoder for the extended prefix (we never emit it, but must read it).
    static func encryptAnyLength(_ plaintext: String, key: ConversationKey, nonce: [UInt8]) throws -> String {
        let plain = Array(plaintext.utf8)
        let prefix: [UInt8] =
            plain.count <= 65535
            ? [UInt8(plain.count >> 8), UInt8(plain.count & 0xff)]
            : [0, 0, UInt8(plain.count >> 24), UInt8(plain.count >> 16 & 0xff), UInt8(plain.count >> 8 & 0xff), UInt8(plain.count & 0xff)]
        let padded = prefix + plain + [UInt8](repeating: 0, count: NIP44.calcPaddedLength(plain.count) - plain.count)
        let keys = NIP44.MessageKeys(conversationKey: key, nonce: nonce)
        let ciphertext = Array(
            try Insecure.ChaCha20CTR.encrypt(
                padded, using: SymmetricKey(data: keys.chachaKey),
                nonce: Insecure.ChaCha20CTR.Nonce(data: keys.chachaNonce)))
        let mac = Array(HMAC<SHA256>.authenticationCode(for: nonce + ciphertext, using: SymmetricKey(data: keys.hmacKey)))
        return Base64.encode([2] + nonce + ciphertext + mac)
    }

    @Test(.enabled(if: Vectors.available)) func rustNostrPayloads() throws {
        let file = try Vectors.json("nip44-rust-nostr-payloads.json")
        let sec1 = try SecretKey(hex: file["sec1"]!.string), sec2 = try SecretKey(hex: file["sec2"]!.string)
        let key = ConversationKey(secretKey: sec2, publicKey: sec1.publicKey)
        #expect(Hex.encode(key.exportBytes()) == file["conversation_key"]!.string)
        for vector in file["cases"]!.array {
            let payload = vector["payload"]!.string
            #expect(try NIP44.decrypt(payload, conversationKey: key) == vector["plaintext"]!.string)
            #expect(
                try NIP44.encrypt(vector["plaintext"]!.string, conversationKey: key, nonce: hexBytes(vector["nonce"]!.string)) == payload)
        }
        for vector in file["cases_large"]!.array {
            let plaintext = String(repeating: vector["pattern"]!.string, count: Int(vector["repeat"]!.int))
            let payload = try NIP44.encrypt(plaintext, conversationKey: key, nonce: hexBytes(vector["nonce"]!.string))
            #expect(SHA256.hash(data: Array(payload.utf8)).hexString == vector["payload_sha256"]!.string)
        }
    }
}

extension Digest {
    var hexString: String { Hex.encode(Array(self)) }
}
