import NostrProtocol
import Testing

@Suite struct RelayMessageTests {
    @Test func clientMessagesRoundTrip() throws {
        let keys = Keys.generate()
        let event = keys.sign(kind: 1, content: "x")
        let filter = Filter(kinds: [1059], tags: ["p": [keys.publicKey.hex]], since: 1_699_800_000, limit: 100)
        let messages: [ClientMessage] = [
            .event(event), .req(subscriptionID: "sub1", filters: [filter, Filter(authors: [keys.publicKey], kinds: [3], limit: 1)]),
            .close(subscriptionID: "sub1"), .auth(RelayAuthEvent.make(keys: keys, relayURL: "wss://r", challenge: "c")),
        ]
        for message in messages {
            #expect(try ClientMessage(json: message.json) == message)
        }
        #expect(filter.json == ##"{"kinds":[1059],"since":1699800000,"limit":100,"#p":["\##(keys.publicKey.hex)"]}"##)
    }

    @Test func relayMessagesRoundTrip() throws {
        let event = Keys.generate().sign(kind: 1, content: "x")
        let messages: [RelayMessage] = [
            .event(subscriptionID: "s", event: event), .ok(eventID: event.id, accepted: false, message: "blocked: no"),
            .eose(subscriptionID: "s"), .closed(subscriptionID: "s", message: "auth-required: log in"),
            .notice("hello"), .auth(challenge: "abc"),
        ]
        for message in messages {
            #expect(try RelayMessage(json: message.json) == message)
        }
        #expect(RelayMessage.prefix(of: "auth-required: log in") == .authRequired)
        #expect(RelayMessage.prefix(of: "rate-limited: slow") == .rateLimited)
        #expect(RelayMessage.prefix(of: "no prefix here") == nil)
    }

    @Test(arguments: [
        ("{}", RelayMessageError.notAnArray),
        ("[]", RelayMessageError.notAnArray),
        ("[\"WHAT\"]", RelayMessageError.unknownType("WHAT")),
        ("[1]", RelayMessageError.malformed("first element must be the message type")),
        ("[\"EOSE\"]", RelayMessageError.malformed("EOSE takes a subscription id")),
        ("[\"EOSE\",\"\"]", RelayMessageError.malformed("subscription id must be a non-empty string of at most 64 characters")),
        ("[\"OK\",\"xx\",true,\"\"]", RelayMessageError.malformed("OK event id must be 64-character hex")),
        ("[\"EVENT\",\"s\",{}]", RelayMessageError.event(.missingField("id"))),
    ])
    func rejectsMalformedRelayMessages(json: String, expected: RelayMessageError) {
        #expect(throws: expected) { try RelayMessage(json: json) }
    }

    @Test func rejectsMalformedFilters() {
        #expect(throws: RelayMessageError.malformed("kinds must be integers in 0...65535")) { try Filter(json: #"{"kinds":[70000]}"#) }
        #expect(throws: RelayMessageError.malformed("ids must be 64-character lowercase hex")) { try Filter(json: #"{"ids":["ab"]}"#) }
        #expect(throws: RelayMessageError.malformed("since must be an integer")) { try Filter(json: #"{"since":1.5}"#) }
        #expect(throws: RelayMessageError.malformed("limit must not be negative")) { try Filter(json: #"{"limit":-1}"#) }
        #expect(throws: RelayMessageError.malformed("REQ needs a subscription id and at least one filter")) {
            try ClientMessage(json: #"["REQ","s"]"#)
        }
    }

    @Test func filterMatching() throws {
        let keys = Keys.generate()
        let recipient = Keys.generate().publicKey.hex
        let event = keys.sign(kind: 1059, tags: [["p", recipient], ["t", "x"]], content: "", createdAt: 100)
        #expect(Filter(kinds: [1059], tags: ["p": [recipient]], since: 100, until: 100).matches(event))
        #expect(!Filter(kinds: [1059], tags: ["p": [recipient]], since: 101).matches(event))
        #expect(!Filter(kinds: [1059], until: 99).matches(event))
        #expect(!Filter(kinds: [1]).matches(event))
        #expect(!Filter(tags: ["p": [keys.publicKey.hex]]).matches(event))
        #expect(Filter(tags: ["p": [recipient], "t": ["x", "y"]]).matches(event))
        #expect(!Filter(tags: ["p": [recipient], "t": ["y"]]).matches(event))
        #expect(Filter(ids: [event.id], authors: [keys.publicKey]).matches(event))
        #expect(!Filter(authors: [Keys.generate().publicKey]).matches(event))
        #expect(Filter(limit: 0).matches(event), "limit does not apply to single events")
    }

    @Test(.enabled(if: Vectors.available)) func vectorFile() throws {
        let file = try Vectors.json("nip01-messages.json")
        for vector in file["client_to_relay"]!.array {
            let json = vector["json"]!.string
            let message = try ClientMessage(json: json)
            #expect(message.json == json, "\(vector["type"]!.string)")
        }
        for vector in file["relay_to_client"]!.array {
            let json = vector["json"]!.string
            let message = try RelayMessage(json: json)
            #expect(message.json == json, "\(vector["type"]!.string)")
        }
        let events = try Vectors.json("nip01-events.json")["events"]!.array.map { try NostrEvent(json: $0["event_json"]!.string) }
        let byID = Dictionary(uniqueKeysWithValues: events.map { ($0.id.hex, $0) })
        for vector in file["filter_matching"]!.array {
            let filter = try Filter(json: vector["filter"]!.string)
            #expect(filter.json == vector["filter"]!.string)
            for id in vector["matching_event_ids"]!.array.map(\.string) {
                #expect(filter.matches(try #require(byID[id])), "\(filter.json) should match \(id)")
            }
            for id in vector["non_matching_event_ids"]!.array.map(\.string) {
                #expect(!filter.matches(try #require(byID[id])), "\(filter.json) should not match \(id)")
            }
        }
    }
}
