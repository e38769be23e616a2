import Crypto
import NostrProtocol
import Testing
import WebPush

/// RFC 8291's worked example (Appendix A) and what the receiving side refuses.
@Suite struct WebPushEncryptionTests {
    enum RFC8291 {
        static let plaintext = Array("When I grow up, I want to be a watermelon".utf8)
        static let senderPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
        static let senderPublic = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
        static let receiverPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
        static let receiverPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
        static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
        static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
        static let body =
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

        static func bytes(_ text: String) throws -> [UInt8] { try #require(Base64URL.decode(text)) }
        static func keys() throws -> WebPushSubscriptionKeys { try WebPushSubscriptionKeys(p256dh: receiverPublic, auth: auth) }
        static func receiverKey() throws -> P256.KeyAgreement.PrivateKey {
            try P256.KeyAgreement.PrivateKey(rawRepresentation: bytes(receiverPrivate))
        }
    }

    @Test func theRFCExampleIsReproducedByteForByte() throws {
        let sender = try P256.KeyAgreement.PrivateKey(rawRepresentation: RFC8291.bytes(RFC8291.senderPrivate))
        #expect(Base64URL.encode(sender.publicKey.x963Representation) == RFC8291.senderPublic)
        let body = try WebPushEncryption.encrypt(
            RFC8291.plaintext, for: RFC8291.keys(), senderKey: sender, salt: RFC8291.bytes(RFC8291.salt))
        #expect(Base64URL.encode(body) == RFC8291.body)
    }

    @Test func theRFCExampleDecrypts() throws {
        let plaintext = try WebPushDecryption.decrypt(
            RFC8291.bytes(RFC8291.body), receiverKey: RFC8291.receiverKey(), authSecret: RFC8291.bytes(RFC8291.auth))
        #expect(plaintext == RFC8291.plaintext)
    }

    @Test func aFreshMessageRoundTripsWithPaddingAndDiffersEachTime() throws {
        let receiver = P256.KeyAgreement.PrivateKey()
        let keys = try WebPushSubscriptionKeys(
            point: Array(receiver.publicKey.x963Representation), authSecret: Array(repeating: 7, count: 16))
        let message = Array(#"{"type":"new_message","event_id":"ab"}"#.utf8)
        let first = try WebPushEncryption.encrypt(message, for: keys, padding: 100)
        let second = try WebPushEncryption.encrypt(message, for: keys, padding: 100)
        #expect(first != second, "a fresh key and salt per message")
        #expect(first.count == WebPushEncryption.headerLength + message.count + 1 + 100 + 16)
        #expect(try WebPushDecryption.decrypt(first, receiverKey: receiver, authSecret: keys.authSecret) == message)
        #expect(try WebPushDecryption.decrypt(second, receiverKey: receiver, authSecret: keys.authSecret) == message)
    }

    /// The sender's key is drawn from 1..<n: a draw of zero, of the group order n, or above it is
    /// drawn again, and the first in range is the key, its public point the generator times it.
    @Test func aSenderKeyIsDrawnAgainUntilItIsBelowTheGroupOrder() throws {
        let order = try #require(Hex.decode("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551"))
        let belowOrder = Array(order.dropLast()) + [order[31] - 1]
        var draws = ScriptedDraws(scalars: [[UInt8](repeating: 0xFF, count: 32), [UInt8](repeating: 0, count: 32), order, belowOrder])
        let key = WebPushEncryption.freshSenderKey(using: &draws)
        #expect(draws.wordsDrawn == 16, "four draws of 32 octets, the last kept")
        #expect(Array(key.rawRepresentation) == belowOrder)
        let same = try P256.KeyAgreement.PrivateKey(rawRepresentation: belowOrder)
        #expect(key.publicKey.x963Representation == same.publicKey.x963Representation)

        #expect(!WebPushEncryption.isInRange(order) && WebPushEncryption.isInRange(belowOrder))
        #expect(!WebPushEncryption.isInRange([UInt8](repeating: 0, count: 32)))
        #expect(WebPushEncryption.isInRange([UInt8](repeating: 0, count: 31) + [1]))
        #expect(!WebPushEncryption.isInRange(Array(order.dropLast()) + [order[31] + 1]))

        var system = SystemRandomNumberGenerator()
        let keys = Set((0..<8).map { _ in Array(WebPushEncryption.freshSenderKey(using: &system).rawRepresentation) })
        #expect(keys.count == 8, "a new key each time")
    }

    /// Hands out the given 32-octet scalars, in order, as `freshSenderKey` reads its words.
    struct ScriptedDraws: RandomNumberGenerator {
        var words: [UInt64]
        var wordsDrawn = 0

        init(scalars: [[UInt8]]) {
            words = scalars.flatMap { scalar in
                (0..<4).map { word in
                    (0..<8).reduce(UInt64(0)) { value, octet in value | UInt64(scalar[word * 8 + octet]) << (octet * 8) }
                }
            }
        }

        mutating func next() -> UInt64 {
            defer { wordsDrawn += 1 }
            return words[wordsDrawn]
        }
    }

    @Test func theLongestMessageFitsAndOneOctetMoreIsRefused() throws {
        let receiver = P256.KeyAgreement.PrivateKey()
        let keys = try WebPushSubscriptionKeys(
            point: Array(receiver.publicKey.x963Representation), authSecret: Array(repeating: 1, count: 16))
        let longest = [UInt8](repeating: 0x61, count: WebPushEncryption.maxPlaintextLength)
        let body = try WebPushEncryption.encrypt(longest, for: keys)
        #expect(body.count == WebPushEncryption.recordSize)
        #expect(try WebPushDecryption.decrypt(body, receiverKey: receiver, authSecret: keys.authSecret) == longest)
        #expect(throws: WebPushEncryptionError.tooLong(3994, limit: 3993)) {
            try WebPushEncryption.encrypt(longest + [0x61], for: keys)
        }
        #expect(throws: WebPushEncryptionError.tooLong(3994, limit: 3993)) {
            try WebPushEncryption.encrypt(longest, for: keys, padding: 1)
        }
    }

    @Test func aTamperedOrMisaddressedMessageIsRefused() throws {
        let body = try RFC8291.bytes(RFC8291.body)
        let auth = try RFC8291.bytes(RFC8291.auth)
        let receiver = try RFC8291.receiverKey()
        var flipped = body
        flipped[flipped.count - 20] ^= 1
        #expect(throws: WebPushDecryptionError.authenticationFailed) {
            try WebPushDecryption.decrypt(flipped, receiverKey: receiver, authSecret: auth)
        }
        #expect(throws: WebPushDecryptionError.authenticationFailed) {
            try WebPushDecryption.decrypt(body, receiverKey: P256.KeyAgreement.PrivateKey(), authSecret: auth)
        }
        #expect(throws: WebPushDecryptionError.authenticationFailed) {
            try WebPushDecryption.decrypt(body, receiverKey: receiver, authSecret: Array(repeating: 0, count: 16))
        }
        #expect(throws: WebPushDecryptionError.truncatedHeader) {
            try WebPushDecryption.decrypt(Array(body.prefix(40)), receiverKey: receiver, authSecret: auth)
        }
        var shortKeyID = body
        shortKeyID[20] = 64
        #expect(throws: WebPushDecryptionError.badKeyID) {
            try WebPushDecryption.decrypt(shortKeyID, receiverKey: receiver, authSecret: auth)
        }
        var smallRecords = body
        smallRecords[16...19] = [0, 0, 0, 18]
        #expect(throws: WebPushDecryptionError.notOneRecord) {
            try WebPushDecryption.decrypt(smallRecords, receiverKey: receiver, authSecret: auth)
        }
    }

    @Test func badSubscriptionKeysAreRefusedWithTheFieldNamed() throws {
        let point = try RFC8291.bytes(RFC8291.receiverPublic)
        #expect(throws: WebPushKeyError.notBase64URL(field: "p256dh")) {
            try WebPushSubscriptionKeys(p256dh: RFC8291.receiverPublic + "=", auth: RFC8291.auth)
        }
        #expect(throws: WebPushKeyError.notBase64URL(field: "auth")) {
            try WebPushSubscriptionKeys(p256dh: RFC8291.receiverPublic, auth: "BTBZMqHH6r4Tts7J/aSIgg")
        }
        #expect(throws: WebPushKeyError.wrongLength(field: "p256dh", expected: 65, got: 33)) {
            try WebPushSubscriptionKeys(point: [0x02] + Array(point[1...32]), authSecret: Array(repeating: 1, count: 16))
        }
        #expect(throws: WebPushKeyError.wrongLength(field: "auth", expected: 16, got: 12)) {
            try WebPushSubscriptionKeys(point: point, authSecret: Array(repeating: 1, count: 12))
        }
        var offCurve = point
        offCurve[64] ^= 1
        #expect(throws: WebPushKeyError.notOnCurve) {
            try WebPushSubscriptionKeys(point: offCurve, authSecret: Array(repeating: 1, count: 16))
        }
        let keys = try RFC8291.keys()
        #expect(keys.p256dh == RFC8291.receiverPublic && keys.auth == RFC8291.auth)
        #expect(
            WebPushKeyError.wrongLength(field: "p256dh", expected: 65, got: 33).description
                == "keys.p256dh must be a 65-byte uncompressed P-256 point (04…), got 33 bytes")
    }
}
