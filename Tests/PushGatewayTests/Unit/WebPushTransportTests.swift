import Foundation
import GatewayWire
import NostrProtocol
import PushGateway
import Testing
import WebPush

/// The Web Push transport's pure parts: what each answer means, `Retry-After`, the message built
/// from a job, and the settings that turn it on.
struct WebPushTransportTests {
    @Test(
        arguments: [
            (201, nil, PushOutcome.delivered),
            (200, nil, .delivered),
            (202, nil, .delivered),
            (410, nil, .removeDevice(reason: "HTTP 410", invalidSinceMilliseconds: nil)),
            (404, "gone", .removeDevice(reason: "HTTP 404", invalidSinceMilliseconds: nil)),
            (403, nil, .configurationError(reason: "HTTP 403")),
            (401, nil, .configurationError(reason: "HTTP 401")),
            (413, nil, .drop(reason: "HTTP 413")),
            (429, nil, .retry(reason: "HTTP 429", afterSeconds: 7)),
            (503, nil, .retry(reason: "HTTP 503", afterSeconds: 7)),
            (400, "a service's own words never become a metric label", .drop(reason: "HTTP 400")),
            (0, "ConnectionError", .retry(reason: "ConnectionError")),
        ] as [(Int, String?, PushOutcome)])
    func eachAnswerHasItsOutcome(status: Int, reason: String?, expected: PushOutcome) {
        #expect(WebPushResponseClassifier.classify(status: status, reason: reason, retryAfterSeconds: 7) == expected)
    }

    /// A 401 or 403 is the operator's alarm only from a browser's push service; from any other
    /// endpoint (whatever a client registered) it drops the job quietly.
    @Test func onlyABrowsersPushServiceRaisesAConfigurationError() throws {
        for host in ["fcm.googleapis.com", "updates.push.services.mozilla.com", "web.push.apple.com", "wns2-par02p.notify.windows.com"] {
            #expect(WebPushResponseClassifier.isKnownService(try PushEndpoint("https://\(host)/x").host), "\(host)")
        }
        for host in ["ntfy.sh", "push.example.com", "fcm.googleapis.com.evil.example", "notify.windows.com.example", "93.184.216.34"] {
            #expect(!WebPushResponseClassifier.isKnownService(try PushEndpoint("https://\(host)/x").host), "\(host)")
        }
        for status in [401, 403] {
            #expect(WebPushResponseClassifier.classify(status: status, fromKnownService: false) == .drop(reason: "HTTP \(status)"))
            #expect(
                WebPushResponseClassifier.classify(status: status, fromKnownService: true) == .configurationError(reason: "HTTP \(status)"))
        }
    }

    @Test func retryAfterIsReadAsSecondsOrADateAndCapped() {
        let now = 1_800_000_000.0
        #expect(WebPushResponseClassifier.retryAfter("120", now: now) == 120)
        #expect(WebPushResponseClassifier.retryAfter(" 0 ", now: now) == 0)
        #expect(WebPushResponseClassifier.retryAfter("999999", now: now) == 3_600, "a service cannot park a job for days")
        // 2027-01-15T08:00:30Z is 1800000030.
        #expect(WebPushResponseClassifier.retryAfter("Fri, 15 Jan 2027 08:00:30 GMT", now: now) == 30)
        #expect(WebPushResponseClassifier.retryAfter("Fri, 15 Jan 2027 07:00:00 GMT", now: now) == 0, "a date past is now")
        for bad in [nil, "", "-5", "soon", "Fri, 99 Foo 2027"] as [String?] {
            #expect(WebPushResponseClassifier.retryAfter(bad, now: now) == nil, "\(bad ?? "nil")")
        }
    }

    static func job(_ notification: APNsNotification, expiresIn seconds: TimeInterval, now: Date) throws -> ClaimedJob {
        ClaimedJob(
            id: 1, apnsID: UUID(), destination: .unifiedPush(endpoint: try PushEndpoint("https://up.example/x"), keys: nil), pubkey: "p",
            topic: "app", deviceUpdatedAt: now, notification: notification, attempts: 1, expiresAt: now.addingTimeInterval(seconds))
    }

    @Test func aTypedPushCarriesIdsAndGenericTextOnly() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let reaction = APNsNotification(type: .newEmojiReaction, eventID: "ev", conversationID: "cv", emoji: "🔥", postID: "post")
        let message = WebPushMessage(try Self.job(reaction, expiresIn: 900.7, now: now), now: now)
        let json = try JSONValue(parsing: message.plaintext)
        #expect(
            json == [
                "type": "new_emoji_reaction", "event_id": "ev", "conversation_id": "cv", "emoji": "🔥", "post_id": "post",
                "title": "New reaction 🔥 in linkstr", "body": "Open linkstr to view",
            ])
        #expect(message.ttl == 900)
        #expect(message.urgency == "normal")
        #expect(message.topic.count == 32 && Base64URL.decode(message.topic)?.count == 24)
        #expect(WebPushMessage(try Self.job(reaction, expiresIn: -5, now: now), now: now).ttl == 0, "an expired job asks for no storage")
    }

    @Test func aRelayWatchPushIsTheGenericAlertCollapsedPerRecipient() throws {
        let now = Date()
        let first = APNsNotification.giftWrap(wrapID: "w1", relay: "wss://relay.example", count: 3, recipient: "bob")
        let second = APNsNotification.giftWrap(wrapID: "w2", relay: "wss://relay.example", count: 1, recipient: "bob")
        let message = WebPushMessage(try Self.job(first, expiresIn: 60, now: now), now: now)
        #expect(
            try JSONValue(parsing: message.plaintext) == [
                "type": "gift_wrap", "wrap_id": "w1", "relay": "wss://relay.example", "count": 3, "title": "linkstr",
                "body": "New activity",
            ])
        #expect(message.topic == WebPushMessage(try Self.job(second, expiresIn: 60, now: now), now: now).topic, "one per recipient")
    }

    @Test func webPushIsOnWithAContactAndEveryBadValueNamesItsKey() throws {
        #expect(
            try GatewayConfiguration.fromEnvironment(["DATABASE_URL": "postgres://u@h/d", "APNS_DISABLE": "1"]).webPush.enabled == false)
        let key = VAPIDKey()
        let on = try GatewayConfiguration.fromEnvironment([
            "DATABASE_URL": "postgres://u@h/d", "APNS_DISABLE": "1", "VAPID_SUBJECT": "mailto:ops@example.com",
            "VAPID_PRIVATE_KEY": key.encoded,
            "WEBPUSH_CA_FILE": "/etc/ca.pem",
        ]).webPush
        #expect(on.enabled && on.subject == "mailto:ops@example.com" && on.privateKey?.publicKey == key.publicKey)
        #expect(on.caFile == "/etc/ca.pem")
        for (name, value) in [
            ("VAPID_SUBJECT", "ops@example.com"), ("VAPID_SUBJECT", "http://example.com"), ("VAPID_SUBJECT", "mailto:a b@example.com"),
            ("VAPID_PRIVATE_KEY", "not-a-key"), ("VAPID_PRIVATE_KEY", Base64URL.encode([UInt8](repeating: 1, count: 31))),
        ] {
            #expect(throws: ConfigurationError.self, "\(name)=\(value)") {
                try GatewayConfiguration.fromEnvironment(["DATABASE_URL": "postgres://u@h/d", "APNS_DISABLE": "1", name: value])
            }
            do {
                _ = try GatewayConfiguration.fromEnvironment(["DATABASE_URL": "postgres://u@h/d", "APNS_DISABLE": "1", name: value])
            } catch {
                #expect(error.key == name)
            }
        }
    }
}
