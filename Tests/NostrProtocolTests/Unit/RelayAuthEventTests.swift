import NostrProtocol
import Testing

/// NIP-42 as a relay checks it.
struct RelayAuthEventTests {
    static let relay = try! RelayURL("wss://inbox.example/relay")

    @Test func theAnswerToThisChallengeForThisRelayProvesItsKey() {
        let keys = Keys.generate()
        let event = RelayAuthEvent.make(keys: keys, relayURL: "WSS://Inbox.Example:443/relay/", challenge: "c1")
        #expect(RelayAuthEvent.refusal(of: event, challenge: "c1", relayURL: Self.relay) == nil)
    }

    @Test func everythingElseIsRefused() {
        let keys = Keys.generate()
        let now = UnixTime.now()
        let cases: [(NostrEvent, String)] = [
            (RelayAuthEvent.make(keys: keys, relayURL: Self.relay.description, challenge: "other"), "wrong challenge"),
            (RelayAuthEvent.make(keys: keys, relayURL: "wss://elsewhere.example/relay", challenge: "c1"), "wrong relay"),
            (RelayAuthEvent.make(keys: keys, relayURL: Self.relay.description, challenge: "c1", createdAt: now - 3600), "created_at"),
            (keys.sign(kind: 1, tags: [["relay", Self.relay.description], ["challenge", "c1"]], content: ""), "not a kind 22242"),
        ]
        for (event, reason) in cases {
            let refusal = RelayAuthEvent.refusal(of: event, challenge: "c1", relayURL: Self.relay, now: now)
            #expect(refusal?.contains(reason) == true, "\(String(describing: refusal))")
        }
    }
}
