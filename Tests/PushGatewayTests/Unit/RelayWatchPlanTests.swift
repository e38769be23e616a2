import NostrProtocol
import NostrRelay
import PushGateway
import Testing

@Suite struct RelayWatchPlanTests {
    static let defaults = ["wss://default.example"]
    static let strict = RelayAddressPolicy(allowsPrivate: false)

    static func urls(_ texts: String...) -> [RelayURL] { texts.map { try! RelayURL($0) } }

    static func plan(_ users: [String: RelayWatchPlan.UserRelays], maxRelays: Int = 500, perUser: Int = 5) -> RelayWatchPlan {
        RelayWatchPlan(users: users, defaults: defaults, maxRelays: maxRelays, maxRelaysPerUser: perUser, policy: strict)
    }

    static func states(_ plan: RelayWatchPlan, _ pubkey: String) -> [String: RelayWatchPlan.RelayState] {
        Dictionary(uniqueKeysWithValues: (plan.users[pubkey]?.relays ?? []).map { ($0.url, $0.state) })
    }

    /// The gateway's own inbox relay is served, not watched: never connected, never counted.
    @Test func theGatewaysOwnInboxIsServedNotWatched() {
        let plan = RelayWatchPlan(
            users: ["a": .init(inboxList: Self.urls("wss://push.example/relay", "wss://other.example", "wss://third.example"))],
            defaults: Self.defaults, maxRelays: 500, maxRelaysPerUser: 2, policy: Self.strict, served: ["wss://push.example/relay"])
        #expect(
            Self.states(plan, "a") == [
                "wss://push.example/relay": .watching, "wss://other.example": .watching, "wss://third.example": .watching,
            ])
        #expect(plan.extraRelays.keys.sorted() == ["wss://other.example", "wss://third.example"])
    }

    @Test func theInboxListWinsOverTheRegistrationWhichWinsOverTheDefaults() {
        let plan = Self.plan([
            "a": .init(inboxList: Self.urls("wss://a-inbox.example"), registration: Self.urls("wss://a-registered.example")),
            "b": .init(inboxList: [], registration: Self.urls("wss://b-registered.example")),
            "c": .init(),
        ])
        #expect(plan.users["a"]?.source == .inboxList && plan.users["a"]?.relays.map(\.url) == ["wss://a-inbox.example"])
        #expect(plan.users["b"]?.source == .registration, "an empty list counts as none")
        #expect(plan.users["c"]?.source == .defaults && plan.users["c"]?.relays.map(\.url) == Self.defaults)
        #expect(plan.extraRelays == ["wss://a-inbox.example": ["a"], "wss://b-registered.example": ["b"]])
    }

    @Test func eachRelayIsWatchedForExactlyThePubkeysThatListIt() {
        let plan = Self.plan([
            "a": .init(inboxList: Self.urls("wss://shared.example", "wss://a.example")),
            "b": .init(registration: Self.urls("WSS://Shared.Example:443/")),
        ])
        #expect(plan.extraRelays == ["wss://shared.example": ["a", "b"], "wss://a.example": ["a"]])
    }

    @Test func theConfiguredRelaysCountAgainstNoUsersLimit() {
        let plan = Self.plan(
            ["a": .init(inboxList: Self.urls("wss://default.example", "wss://a1.example", "wss://a2.example"))], perUser: 2)
        #expect(Self.states(plan, "a").values.allSatisfy { $0 == .watching })
        #expect(plan.extraRelays.keys.sorted() == ["wss://a1.example", "wss://a2.example"], "RELAYS are watched for everyone already")
    }

    @Test func relaysPastTheUsersLimitAreOverLimitInTheUsersOrder() {
        let list = Self.urls("wss://r1.example", "wss://r2.example", "wss://r3.example")
        let plan = Self.plan(["a": .init(inboxList: list)], perUser: 2)
        #expect(plan.users["a"]?.relays.map(\.state) == [.watching, .watching, .overLimit])
        #expect(plan.extraRelays.keys.sorted() == ["wss://r1.example", "wss://r2.example"])
    }

    @Test func privateAddressesAreRefusedAndTakeNoSlot() {
        let list = Self.urls("ws://127.0.0.1:7777", "ws://localhost", "wss://ok.example")
        let plan = Self.plan(["a": .init(inboxList: list)], perUser: 1)
        #expect(plan.users["a"]?.relays.map(\.state) == [.refused, .refused, .watching])
        #expect(plan.extraRelays == ["wss://ok.example": ["a"]])
        let open = RelayWatchPlan(
            users: ["a": .init(inboxList: list)], defaults: Self.defaults, maxRelays: 500, maxRelaysPerUser: 5,
            policy: RelayAddressPolicy(allowsPrivate: true))
        #expect(open.extraRelays.count == 3)
    }

    /// Past the instance's cap, the relays most users list keep their slots (ties by URL), and
    /// the users of the others see them as over the limit.
    @Test func theInstanceCapKeepsTheRelaysMostUsersNeed() {
        let plan = Self.plan(
            [
                "a": .init(inboxList: Self.urls("wss://popular.example", "wss://a-only.example")),
                "b": .init(inboxList: Self.urls("wss://popular.example", "wss://b-only.example")),
                "c": .init(inboxList: Self.urls("wss://popular.example")),
            ], maxRelays: 3)
        #expect(plan.extraRelays == ["wss://popular.example": ["a", "b", "c"], "wss://a-only.example": ["a"]])
        #expect(Self.states(plan, "b")["wss://b-only.example"] == .overLimit)
        #expect(Self.states(plan, "a")["wss://a-only.example"] == .watching)
        #expect(plan.overLimitRelays == ["wss://b-only.example"], "reported over the limit, not connected")
        let none = Self.plan(["a": .init(inboxList: Self.urls("wss://a.example"))], maxRelays: 1)
        #expect(none.extraRelays.isEmpty && Self.states(none, "a")["wss://a.example"] == .overLimit, "RELAYS fill the cap")
    }

    @Test func theSameInputsGiveTheSamePlan() {
        var users: [String: RelayWatchPlan.UserRelays] = [:]
        for index in 0..<50 {
            users["user\(index)"] = .init(inboxList: Self.urls("wss://r\(index % 7).example", "wss://s\(index % 3).example"))
        }
        #expect(Self.plan(users, maxRelays: 6) == Self.plan(users, maxRelays: 6))
        #expect(Self.plan(users, maxRelays: 6).extraRelays.count == 5)
    }
}
