import Foundation
import GatewayWire
import HTTPTypes
import HummingbirdTesting
import NostrProtocol
import PushGateway
import Testing

@Suite(.serialized) struct ArchiveAndPushTests {
    static func pushBody(
        _ type: String = "new_post", event: String = "ev1", conversation: String = "C1", to recipients: [Keys], extra: String = ""
    ) -> String {
        let list = recipients.map { "\"\($0.publicKey.hex)\"" }.joined(separator: ",")
        return
            #"{"notification_type":"\#(type)","event_id":"\#(event)","conversation_id":"\#(conversation)","recipient_pubkeys":[\#(list)]\#(extra)}"#
    }

    @Test func archiveReplaceScopedAndEmptyScope() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate()
            let pub = alice.publicKey.hex
            // Without a device nothing is stored.
            let early = try await gateway.send(
                alice, .put, "/v1/conversations/archive-state", json: #"{"archived_conversation_ids":["A"]}"#)
            #expect(early.status == .accepted)
            #expect(early.json == ["status": "synced"])
            #expect(try await gateway.count("SELECT count(*)::int FROM archived_conversations") == 0)

            try await gateway.send(alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x40)))
            try await gateway.send(
                alice, .put, "/v1/conversations/archive-state", json: #"{"archived_conversation_ids":[" A ","B","B",""]}"#)
            #expect(
                try await gateway.count(
                    "SELECT count(*)::int FROM archived_conversations WHERE pubkey = '\(pub)' AND conversation_id IN ('A','B')") == 2)
            #expect(try await gateway.count("SELECT count(*)::int FROM archived_conversations") == 2)

            // Scoped: only C and A change; B stays archived.
            try await gateway.send(
                alice, .put, "/v1/conversations/archive-state",
                json: #"{"archived_conversation_ids":["C"],"known_conversation_ids":["A","C"]}"#)
            #expect(try await gateway.count("SELECT count(*)::int FROM archived_conversations WHERE conversation_id IN ('B','C')") == 2)
            #expect(try await gateway.count("SELECT count(*)::int FROM archived_conversations") == 2)

            // An empty scope changes nothing.
            try await gateway.send(
                alice, .put, "/v1/conversations/archive-state", json: #"{"archived_conversation_ids":[],"known_conversation_ids":[]}"#)
            #expect(try await gateway.count("SELECT count(*)::int FROM archived_conversations") == 2)

            // Full replacement.
            try await gateway.send(alice, .put, "/v1/conversations/archive-state", json: #"{"archived_conversation_ids":["Z"]}"#)
            #expect(try await gateway.count("SELECT count(*)::int FROM archived_conversations WHERE conversation_id = 'Z'") == 1)
            #expect(try await gateway.count("SELECT count(*)::int FROM archived_conversations") == 1)

            // Removed with the last device.
            try await gateway.send(alice, .post, "/v1/devices/unregister", json: #"{"device_token":"\#(GatewayHarness.token(0x40))"}"#)
            #expect(try await gateway.count("SELECT count(*)::int FROM archived_conversations") == 0)
        }
    }

    @Test func archiveErrors() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate()
            try await gateway.send(alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x41)))
            let cases: [(String, String)] = [
                ("{}", "archived_conversation_ids is required"),
                (#"{"archived_conversation_ids":"A"}"#, "invalid json body: archived_conversation_ids must be an array of strings"),
                (
                    #"{"archived_conversation_ids":["A"],"known_conversation_ids":["A",""]}"#,
                    "known_conversation_ids must contain nonempty conversation IDs"
                ),
                (
                    #"{"archived_conversation_ids":["A"],"known_conversation_ids":["B"]}"#,
                    "archived_conversation_ids must be within known_conversation_ids"
                ),
                (
                    #"{"archived_conversation_ids":["A\u0000"]}"#,
                    "invalid json body: archived_conversation_ids must not contain control characters"
                ),
                (
                    #"{"archived_conversation_ids":["A"],"known_conversation_ids":["A","B\u001f"]}"#,
                    "invalid json body: known_conversation_ids must not contain control characters"
                ),
                ("nope", "invalid json body"),
            ]
            for (body, message) in cases {
                let response = try await gateway.send(alice, .put, "/v1/conversations/archive-state", json: body)
                #expect(response.status == .badRequest, "\(body)")
                #expect(response.errorMessage == message, "\(body)")
            }
            #expect(try await gateway.count("SELECT count(*)::int FROM archived_conversations") == 0)
        }
    }

    @Test func pushFanOutSkipsSenderArchivedAndDeviceless() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate(), bob = Keys.generate(), carol = Keys.generate(), dave = Keys.generate()
            try await gateway.send(alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x50)))
            try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x51)))
            try await gateway.send(
                bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x52), environment: "production")
            )
            try await gateway.send(carol, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x53)))
            try await gateway.send(carol, .put, "/v1/conversations/archive-state", json: #"{"archived_conversation_ids":["C1"]}"#)

            // Alice posts to everyone, herself included: Bob's two devices get jobs; Carol archived
            // the conversation; Dave has no device; Alice is the sender.
            let response = try await gateway.send(alice, .post, "/v1/push", json: Self.pushBody(to: [alice, bob, carol, dave, bob]))
            #expect(response.status == .accepted)
            // Only Bob counts, as in the reference service: a recipient counts when a job was queued for it.
            #expect(response.json == ["status": "accepted", "recipient_count": 1, "candidate_devices": 2])
            #expect(
                try await gateway.count("SELECT count(*)::int FROM push_queue WHERE pubkey = '\(bob.publicKey.hex)' AND event_id = 'ev1'")
                    == 2)
            #expect(
                try await gateway.count("SELECT count(*)::int FROM push_dedupe WHERE event_id = 'ev1'") == 1, "dedupe rows only for Bob")
            #expect(
                try await gateway.count(
                    "SELECT count(*)::int FROM push_queue WHERE expires_at BETWEEN now() + interval '14 minutes' AND now() + interval '16 minutes'"
                ) == 2)

            // The same event again is deduped; a reaction to it is a different notification.
            let again = try await gateway.send(alice, .post, "/v1/push", json: Self.pushBody(to: [bob]))
            #expect(again.json == ["status": "accepted", "recipient_count": 0, "candidate_devices": 0])
            let reaction = try await gateway.send(
                alice, .post, "/v1/push",
                json: Self.pushBody("new_emoji_reaction", to: [bob], extra: #","emoji":"👍","post_id":"p1""#))
            #expect(reaction.json?["candidate_devices"] == 2)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_queue WHERE emoji = '👍' AND post_id = 'p1'") == 2)
            #expect(
                try await gateway.count("SELECT count(*)::int FROM push_queue WHERE notification_type = 'new_post' AND post_id IS NOT NULL")
                    == 0)

            // Archiving the conversation cancels Bob's queued pushes for it: they leave the queue.
            try await gateway.send(bob, .put, "/v1/conversations/archive-state", json: #"{"archived_conversation_ids":["C1"]}"#)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_queue WHERE pubkey = '\(bob.publicKey.hex)'") == 0)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_batches WHERE '\(bob.publicKey.hex)' = ANY (pubkeys)") == 0)
        }
    }

    @Test func aPushToPubkeysWithoutDevicesStoresNothingButItsReplayKey() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate()
            let strangers = (0..<PushRequest.maxRecipients).map { _ in Keys.generate() }
            let response = try await gateway.send(alice, .post, "/v1/push", json: Self.pushBody(to: strangers))
            #expect(response.json == ["status": "accepted", "recipient_count": 0, "candidate_devices": 0])
            #expect(try await gateway.count("SELECT count(*)::int FROM push_dedupe") == 0)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_queue") == 0)
            #expect(try await gateway.count("SELECT count(*)::int FROM auth_replays") == 1)
        }
    }

    /// A device gets at most its budget of alerts, whoever asks: pushes past it are dropped and
    /// counted, never queued, and leave no dedupe row.
    @Test func aDevicesBudgetCapsTypedPushesWhoeverSendsThem() async throws {
        try await GatewayHarness.run(deviceBudget: PushBudget(alerts: 3, perSeconds: 3600)) { gateway in
            let bob = Keys.generate(), carol = Keys.generate()
            try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x55)))
            try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x56)))
            try await gateway.send(carol, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x57)))
            // Five senders, fresh keys each: the budget is the device's, not the sender's.
            var answers: [JSONValue?] = []
            for index in 0..<5 {
                let response = try await gateway.send(
                    Keys.generate(), .post, "/v1/push", json: Self.pushBody(event: "spam-\(index)", to: [bob]))
                #expect(response.status == .accepted)
                answers.append(response.json)
            }
            let accepted: JSONValue = ["status": "accepted", "recipient_count": 1, "candidate_devices": 2]
            let dropped: JSONValue = ["status": "accepted", "recipient_count": 0, "candidate_devices": 0]
            #expect(answers == [accepted, accepted, accepted, dropped, dropped])
            #expect(try await gateway.count("SELECT count(*)::int FROM push_queue") == 6)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_dedupe") == 3, "no dedupe row for a dropped push")
            let metrics = String(decoding: await gateway.metrics.exposition(), as: UTF8.self)
            #expect(metrics.contains(#"linkstr_pushes_total{outcome="over_budget",reason="none"} 4"#), "two devices, two pushes each")
            // Another device's budget is untouched.
            #expect(
                try await gateway.send(Keys.generate(), .post, "/v1/push", json: Self.pushBody(event: "hello", to: [carol])).json?[
                    "candidate_devices"] == 1)
        }
    }

    @Test func removingADeviceCancelsItsJobs() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate(), bob = Keys.generate()
            try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x60)))
            try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x61)))
            try await gateway.send(alice, .post, "/v1/push", json: Self.pushBody(to: [bob]))
            #expect(try await gateway.count("SELECT count(*)::int FROM push_queue") == 2)
            try await gateway.send(bob, .post, "/v1/devices/unregister", json: #"{"device_token":"\#(GatewayHarness.token(0x60))"}"#)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_queue") == 1)
            // A token that moves to another pubkey takes no queued job with it.
            try await gateway.send(alice, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x61)))
            #expect(try await gateway.count("SELECT count(*)::int FROM push_queue") == 0)
        }
    }

    @Test func pushValidation() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate(), bob = Keys.generate()
            try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x70)))
            let many = (0..<501).map { _ in "\"\(Keys.generate().publicKey.hex)\"" }.joined(separator: ",")
            let cases: [(String, String)] = [
                (
                    #"{"notification_type":"new_thing","event_id":"e","conversation_id":"c","recipient_pubkeys":["\#(bob.publicKey.hex)"]}"#,
                    "unsupported notification_type"
                ),
                (
                    #"{"notification_type":"new_post","conversation_id":"c","recipient_pubkeys":["\#(bob.publicKey.hex)"]}"#,
                    "event_id is required"
                ),
                (
                    #"{"notification_type":"new_post","event_id":"e","conversation_id":"c","recipient_pubkeys":["\#(bob.publicKey.hex)"],"push_type":"voip"}"#,
                    "push_type must be alert or background"
                ),
                (
                    #"{"notification_type":"incoming_call","event_id":"e","conversation_id":"c","recipient_pubkeys":["\#(bob.publicKey.hex)"],"push_type":"background"}"#,
                    "incoming_call cannot be a background push"
                ),
                (
                    #"{"notification_type":"new_post","event_id":" ","conversation_id":"c","recipient_pubkeys":["\#(bob.publicKey.hex)"]}"#,
                    "event_id is required"
                ),
                (
                    #"{"notification_type":"new_post","event_id":"e","recipient_pubkeys":["\#(bob.publicKey.hex)"]}"#,
                    "conversation_id is required"
                ),
                (
                    #"{"notification_type":"new_post","event_id":"e","conversation_id":"c","recipient_pubkeys":[]}"#,
                    "recipient_pubkeys is required"
                ),
                (
                    #"{"notification_type":"new_post","event_id":"e","conversation_id":"c","recipient_pubkeys":["", " "]}"#,
                    "recipient_pubkeys is required"
                ),
                (
                    #"{"notification_type":"new_emoji_reaction","event_id":"e","conversation_id":"c","recipient_pubkeys":["\#(bob.publicKey.hex)"]}"#,
                    "emoji is required for new_emoji_reaction"
                ),
                (
                    #"{"notification_type":"new_post","event_id":"e","conversation_id":"c","recipient_pubkeys":["not-a-key"]}"#,
                    "recipient_pubkeys must be 64-character hex public keys"
                ),
                (
                    #"{"notification_type":"new_post","event_id":"e","conversation_id":"c","recipient_pubkeys":[\#(many)]}"#,
                    "recipient_pubkeys has 501 entries; at most 500 are accepted"
                ),
                (
                    #"{"notification_type":"new_post","event_id":"e","conversation_id":"c","recipient_pubkeys":"x"}"#,
                    "invalid json body: recipient_pubkeys must be an array of strings"
                ),
                // PostgreSQL cannot store NUL; control characters would also end up in APNs headers.
                (
                    #"{"notification_type":"new_post","event_id":"e\u0000","conversation_id":"c","recipient_pubkeys":["\#(bob.publicKey.hex)"]}"#,
                    "invalid json body: event_id must not contain control characters"
                ),
                (
                    #"{"notification_type":"new_post","event_id":"e","conversation_id":"c\n1","recipient_pubkeys":["\#(bob.publicKey.hex)"]}"#,
                    "invalid json body: conversation_id must not contain control characters"
                ),
                (
                    #"{"notification_type":"new_emoji_reaction","event_id":"e","conversation_id":"c","emoji":"\u0007","recipient_pubkeys":["\#(bob.publicKey.hex)"]}"#,
                    "invalid json body: emoji must not contain control characters"
                ),
                // Text in the alert title is a phishing line on every recipient's lock screen.
                (
                    #"{"notification_type":"new_emoji_reaction","event_id":"e","conversation_id":"c","emoji":"⚠ Verify your account at evil.example","recipient_pubkeys":["\#(bob.publicKey.hex)"]}"#,
                    "emoji must be a single emoji"
                ),
                (
                    #"{"notification_type":"new_emoji_reaction","event_id":"e","conversation_id":"c","emoji":"👍👍","recipient_pubkeys":["\#(bob.publicKey.hex)"]}"#,
                    "emoji must be a single emoji"
                ),
                (
                    #"{"notification_type":"new_emoji_reaction","event_id":"e","conversation_id":"c","emoji":"1","recipient_pubkeys":["\#(bob.publicKey.hex)"]}"#,
                    "emoji must be a single emoji"
                ),
            ]
            for (body, message) in cases {
                let response = try await gateway.send(alice, .post, "/v1/push", json: body)
                #expect(response.status == .badRequest, "\(message)")
                #expect(response.errorMessage == message)
            }
            #expect(try await gateway.count("SELECT count(*)::int FROM push_queue") == 0)
            #expect(try await gateway.count("SELECT count(*)::int FROM push_dedupe") == 0)
        }
    }
}
