import Crypto
import Foundation
import GatewayWire
import NostrProtocol
import PushGateway
import Synchronization
import Testing

@Suite struct APNsTokenTests {
    static let key = P256.Signing.PrivateKey()
    static let app = APNsApp(topic: "app.linkstr", keyID: "ABC123DEFG", teamID: "TEAM123456", privateKeyPEM: key.pemRepresentation)

    static func decodeSegment(_ segment: Substring) throws -> JSONValue {
        var text = segment.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return try JSONValue(parsing: try #require(Base64.decode(text)))
    }

    @Test func jwtHasHeaderClaimsAndAValidES256Signature() throws {
        let token = try APNsTokenSigner(app: Self.app).token(issuedAt: Date(timeIntervalSince1970: 1_700_000_000))
        let parts = token.split(separator: ".")
        #expect(parts.count == 3)
        #expect(try Self.decodeSegment(parts[0]) == ["alg": "ES256", "kid": "ABC123DEFG"])
        #expect(try Self.decodeSegment(parts[1]) == ["iss": "TEAM123456", "iat": 1_700_000_000], "iat is an integer, not a string")
        #expect(!token.contains("="), "base64url without padding")
        var signature = parts[2].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while signature.count % 4 != 0 { signature += "=" }
        let raw = try #require(Base64.decode(signature))
        #expect(raw.count == 64, "raw r‖s, not DER")
        let parsed = try P256.Signing.ECDSASignature(rawRepresentation: raw)
        #expect(Self.key.publicKey.isValidSignature(parsed, for: Array("\(parts[0]).\(parts[1])".utf8)))
    }

    final class FakeClock: Sendable {
        let time = Mutex(Date(timeIntervalSince1970: 1_700_000_000))
        func advance(minutes: Double) { time.withLock { $0 = $0.addingTimeInterval(minutes * 60) } }
        func now() -> Date { time.withLock { $0 } }
    }

    @Test func cacheReusesThenRefreshesWithinTheRules() async throws {
        let clock = FakeClock()
        let cache = APNsTokenCache(signer: try APNsTokenSigner(app: Self.app), refreshAfter: 50 * 60, now: { clock.now() })
        let first = try await cache.token()
        clock.advance(minutes: 49)
        #expect(try await cache.token() == first, "reused for 49 minutes")
        clock.advance(minutes: 2)
        let second = try await cache.token()
        #expect(second != first, "refreshed after 50 minutes")

        // A 403 ExpiredProviderToken on a 5-minute-old token may not refresh (20-minute rule)…
        clock.advance(minutes: 5)
        #expect(try await cache.refresh(rejected: second) == false)
        #expect(try await cache.token() == second)
        // …but may once the token is 20 minutes old.
        clock.advance(minutes: 15)
        #expect(try await cache.refresh(rejected: second) == true)
        let third = try await cache.token()
        #expect(third != second)
        // A stale rejection (another worker already refreshed) does not refresh again.
        #expect(try await cache.refresh(rejected: second) == true)
        #expect(try await cache.token() == third)
    }

    @Test func refreshIntervalIsClampedTo20To55Minutes() async throws {
        let clock = FakeClock()
        let eager = APNsTokenCache(signer: try APNsTokenSigner(app: Self.app), refreshAfter: 60, now: { clock.now() })
        let token = try await eager.token()
        clock.advance(minutes: 19)
        #expect(try await eager.token() == token, "never refreshed more often than every 20 minutes")
        let lazy = APNsTokenCache(signer: try APNsTokenSigner(app: Self.app), refreshAfter: 3 * 3600, now: { clock.now() })
        let lazyToken = try await lazy.token()
        clock.advance(minutes: 56)
        #expect(try await lazy.token() != lazyToken, "never kept past 55 minutes")
    }
}

@Suite struct DeliveryRulesTests {
    @Test func retryScheduleDoublesToAMinuteWithJitter() {
        let policy = RetryPolicy()
        #expect((1...7).map { policy.delay(afterAttempt: $0, random: 0) } == [2, 4, 8, 16, 32, 60, 60])
        #expect(policy.delay(afterAttempt: 1, random: 0.999) < 2.41)
        #expect(policy.delay(afterAttempt: 6, random: 0.5) == 66)
    }

    @Test(
        arguments: [
            (200, nil, PushOutcome.delivered),
            (400, "BadDeviceToken", .removeDevice(reason: "BadDeviceToken", invalidSinceMilliseconds: nil)),
            (400, "DeviceTokenNotForTopic", .removeDevice(reason: "DeviceTokenNotForTopic", invalidSinceMilliseconds: nil)),
            (410, "Unregistered", .removeDevice(reason: "Unregistered", invalidSinceMilliseconds: 1_700_000_000_000)),
            // The operator's topic, key or certificate is wrong: nothing about the device.
            (400, "TopicDisallowed", .configurationError(reason: "TopicDisallowed")),
            (400, "BadTopic", .configurationError(reason: "BadTopic")),
            (400, "MissingTopic", .configurationError(reason: "MissingTopic")),
            (403, "InvalidProviderToken", .configurationError(reason: "InvalidProviderToken")),
            (403, "MissingProviderToken", .configurationError(reason: "MissingProviderToken")),
            (403, "BadCertificate", .configurationError(reason: "BadCertificate")),
            (403, "BadCertificateEnvironment", .configurationError(reason: "BadCertificateEnvironment")),
            (403, "Forbidden", .configurationError(reason: "Forbidden")),
            (403, "UnrelatedKeyIdInToken", .configurationError(reason: "UnrelatedKeyIdInToken")),
            (403, "BadEnvironmentKeyIdInToken", .configurationError(reason: "BadEnvironmentKeyIdInToken")),
            // A reason outside its status's list is a drop, never a removal or a configuration error.
            (403, "BadDeviceToken", .drop(reason: "BadDeviceToken")),
            (500, "TopicDisallowed", .retry(reason: "TopicDisallowed")),
            (403, "ExpiredProviderToken", .refreshTokenAndRetry(reason: "ExpiredProviderToken")),
            (429, "TooManyRequests", .retry(reason: "TooManyRequests")),
            (500, "InternalServerError", .retry(reason: "InternalServerError")),
            (503, "ServiceUnavailable", .retry(reason: "ServiceUnavailable")),
            (400, "BadCollapseId", .drop(reason: "BadCollapseId")),
            (413, "PayloadTooLarge", .drop(reason: "PayloadTooLarge")),
            (404, nil, .drop(reason: "HTTP 404")),
        ] as [(Int, String?, PushOutcome)])
    func classification(status: Int, reason: String?, expected: PushOutcome) {
        #expect(
            APNsResponseClassifier.classify(status: status, reason: reason, timestampMilliseconds: status == 410 ? 1_700_000_000_000 : nil)
                == expected)
    }

    @Test func payloadIsExactlyWhatTheAppExpects() throws {
        let post = APNsNotification(type: .newPost, eventID: "ev1", conversationID: "C1", emoji: "x", postID: "p")
        #expect(
            try JSONValue(parsing: post.payload) == [
                "aps": ["alert": ["title": "New post in linkstr", "body": "Open linkstr to view"], "sound": "default", "thread-id": "C1"],
                "type": "new_post", "event_id": "ev1", "conversation_id": "C1",
            ])
        let reaction = APNsNotification(type: .newEmojiReaction, eventID: "ev2", conversationID: "C1", emoji: "🔥", postID: "p1")
        #expect(
            try JSONValue(parsing: reaction.payload) == [
                "aps": [
                    "alert": ["title": "New reaction 🔥 in linkstr", "body": "Open linkstr to view"], "sound": "default", "thread-id": "C1",
                ],
                "type": "new_emoji_reaction", "event_id": "ev2", "conversation_id": "C1", "emoji": "🔥", "post_id": "p1",
            ])
        let headers = Dictionary(uniqueKeysWithValues: reaction.headers(topic: "app.linkstr", expiration: 1_700_000_900))
        #expect(
            headers == [
                "apns-topic": "app.linkstr", "apns-push-type": "alert", "apns-priority": "10",
                "apns-collapse-id": "ev2", "apns-expiration": "1700000900",
            ])
    }

    @Test func largestAcceptedRequestStaysUnder4096Bytes() {
        // PushRequest caps event_id and conversation_id at 128 bytes and emoji at 64.
        let worst = APNsNotification(
            type: .newEmojiReaction, eventID: String(repeating: "e", count: 128),
            conversationID: String(repeating: "\u{1F600}", count: 32), emoji: String(repeating: "\u{1F525}", count: 16),
            postID: String(repeating: "p", count: 128))
        #expect(worst.payload.utf8.count <= APNsNotification.maxPayloadBytes)
        #expect(worst.collapseID.utf8.count <= 64)
        #expect(
            APNsNotification(type: .newPost, eventID: String(repeating: "é", count: 40), conversationID: "c").collapseID.utf8.count == 64)
    }
}
