import Crypto
import Foundation
import GatewayWire
import NostrProtocol
import PushGateway
import Testing

/// `APPS_FILE` and `APNS_APPS_FILE`: the apps, their APNs keys and their own alert text, and a
/// clear refusal of each mistake.
struct AppsFileTests {
    static let base = ["DATABASE_URL": "postgres://u:p@127.0.0.1:5432/db"]

    /// Writes `text` (with `KEY` replaced by a real .p8 file's path) and reads the environment with it.
    static func configuration(_ key: String, _ text: String, extra: [String: String] = [:]) throws -> GatewayConfiguration {
        let directory = FileManager.default.temporaryDirectory
        let file = directory.appendingPathComponent("apps-\(UUID().uuidString).json").path
        let p8 = directory.appendingPathComponent("key-\(UUID().uuidString).p8").path
        try P256.Signing.PrivateKey().pemRepresentation.write(toFile: p8, atomically: true, encoding: .utf8)
        try text.replacingOccurrences(of: "KEY", with: p8).write(toFile: file, atomically: true, encoding: .utf8)
        defer {
            try? FileManager.default.removeItem(atPath: file)
            try? FileManager.default.removeItem(atPath: p8)
        }
        return try GatewayConfiguration.fromEnvironment(base.merging(extra.merging([key: file]) { $1 }) { $1 })
    }

    @Test func oneFileNamesEveryAppItsKeyAndItsOwnText() throws {
        let configuration = try Self.configuration(
            "APPS_FILE",
            #"""
            [{"topic": "chat.ios", "key_id": "K1", "team_id": "T1", "key_path": "KEY",
              "alerts": {"new_message": {"title": "Chat", "body": "Someone wrote to you"},
                         "new_emoji_reaction": {"title": "{emoji} from a friend", "body": "Open Chat"}}},
             {"topic": "chat.web", "alerts": {"incoming_call": {"title": "Ring ring", "body": "Pick up"}}}]
            """#)
        #expect(configuration.apns.apps.map(\.topic) == ["chat.ios"], "only the app with a key is sent for on APNs")
        #expect(configuration.apns.defaultTopic == "chat.ios")
        #expect(configuration.apns.topics == ["chat.ios", "chat.web"], "an app without an APNs key still registers devices")
        #expect(configuration.alerts.text(topic: "chat.ios", type: .newMessage) == AlertText(title: "Chat", body: "Someone wrote to you"))
        #expect(configuration.alerts.text(topic: "chat.ios", type: .mention) == nil, "a type not named keeps the generic text")
        #expect(configuration.alerts.text(topic: "chat.web", type: .incomingCall)?.title == "Ring ring")

        var reaction = APNsNotification(type: .newEmojiReaction, eventID: "e", conversationID: "c", emoji: "🎉")
        reaction.alertText = configuration.alerts.text(topic: "chat.ios", type: .newEmojiReaction)
        #expect(reaction.title == "🎉 from a friend")
        #expect(try JSONValue(parsing: reaction.payload)["aps"]?["alert"]?["title"] == "🎉 from a friend")
    }

    @Test func theAPNsAppsFileTakesTextToo() throws {
        let configuration = try Self.configuration(
            "APNS_APPS_FILE",
            #"[{"topic": "a.b", "key_id": "K", "team_id": "T", "key_path": "KEY", "alerts": {"gift_wrap": {"title": "A.B", "body": "Something new"}}}]"#
        )
        var wrap = APNsNotification.giftWrap(wrapID: "w", relay: "wss://r.example", count: 2, recipient: "p")
        wrap.alertText = configuration.alerts.text(topic: "a.b", type: .giftWrap)
        let payload = try JSONValue(parsing: wrap.payload)
        #expect(payload["aps"]?["alert"] == ["title": "A.B", "body": "Something new"])
        #expect(payload["aps"]?["mutable-content"] == 1 && payload["wrap_id"] == "w" && payload["count"] == 2)
    }

    @Test func eachMistakeStopsStartUpNamingIt() throws {
        let cases: [(String, String, String)] = [
            ("APPS_FILE", "{}", "must be a JSON array"),
            ("APPS_FILE", #"[{"key_id": "K"}]"#, "entry 0 needs a topic"),
            ("APPS_FILE", #"[{"topic": "a"}, {"topic": "a"}]"#, "entry 1: topic a is listed twice"),
            ("APPS_FILE", #"[{"topic": "a", "key_id": "K"}]"#, "entry 0 needs topic, key_id, team_id and key_path (or only topic)"),
            ("APNS_APPS_FILE", #"[{"topic": "a"}]"#, "entry 0 needs topic, key_id, team_id and key_path"),
            ("APPS_FILE", #"[{"topic": "a", "alerts": []}]"#, "entry 0: alerts must be an object of notification types"),
            ("APPS_FILE", #"["a"]"#, "entry 0 must be an object"),
            (
                "APPS_FILE", #"[{"topic": "a", "keyId": "K", "teamId": "T", "keyPath": "KEY"}]"#,
                "entry 0: unknown field keyId (one of alerts, key_id, key_path, team_id, topic)"
            ),
            ("APPS_FILE", #"[{"topic": "a", "key_id": 123, "team_id": "T", "key_path": "KEY"}]"#, "entry 0: key_id must be a string"),
            (
                "APPS_FILE", #"[{"topic": "a", "alerts": {"new_emoji_reaction": {"title": "{emoji}{emoji}", "body": "B"}}}]"#,
                "entry 0: alerts.new_emoji_reaction: {emoji} at most once in a title or body"
            ),
            (
                "APPS_FILE", #"[{"topic": "a", "alerts": {"new_message": {"title": "T"}}}]"#,
                "entry 0: alerts.new_message needs a title and a body"
            ),
            (
                "APPS_FILE", #"[{"topic": "a", "alerts": {"new_mesage": {"title": "T", "body": "B"}}}]"#,
                "entry 0: alerts: unknown type new_mesage (one of \(NotificationType.allCases.map(\.rawValue).joined(separator: ", ")))"
            ),
            (
                "APPS_FILE", #"[{"topic": "a", "alerts": {"mention": {"title": "\#(String(repeating: "x", count: 257))", "body": "B"}}}]"#,
                "entry 0: alerts.mention: a title or body is 1 to 256 bytes without control characters"
            ),
            (
                "APPS_FILE", #"[{"topic": "a", "alerts": {"mention": {"title": "T\u0007", "body": "B"}}}]"#,
                "entry 0: alerts.mention: a title or body is 1 to 256 bytes without control characters"
            ),
        ]
        for (key, text, problem) in cases {
            #expect(throws: ConfigurationError(key: key, problem), "\(text)") {
                try Self.configuration(key, text, extra: ["APNS_DISABLE": "1"])
            }
        }
        #expect(
            throws: ConfigurationError(key: "APPS_FILE", "set APPS_FILE or APNS_APPS_FILE, not both (APPS_FILE takes the same entries)")
        ) {
            try Self.configuration("APPS_FILE", #"[{"topic": "a"}]"#, extra: ["APNS_APPS_FILE": "/x.json"])
        }
    }

    /// A push for an app without an APNs key here is the operator's configuration.
    @Test func aTopicWithoutAKeyIsAConfigurationError() {
        #expect(
            APNsResponseClassifier.classify(status: 0, reason: "TopicNotConfigured") == .configurationError(reason: "TopicNotConfigured"))
    }
}
