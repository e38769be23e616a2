package import NostrProtocol
package import NostrRelay

/// Which relays the watcher connects to, and for exactly which pubkeys, as a value: computed from
/// each watched user's inbox relays (their NIP-17 kind 10050 list, else the `relays` their devices
/// registered), the configured `RELAYS`, the limits and the address policy. The same inputs give
/// the same plan on every instance.
///
/// - `RELAYS` are watched for everyone and count against no user's limit; so is `served`, the
///   gateway's own inbox relay, which needs no watching (it pushes what it stores) and is never
///   connected to (it would serve the gateway nobody's wraps).
/// - A user's own relays: those the policy refuses are `refused`; past `maxRelaysPerUser` (in the
///   user's order) `overLimit`.
/// - Across users, at most `maxRelays` relays in all (`RELAYS` included): the ones most users list
///   win, ties by URL; a user's relay that lost is `overLimit` for that user.
package struct RelayWatchPlan: Sendable, Equatable {
    /// Where a user's relays came from (`GET /v1/devices`' `watch.source`).
    package enum Source: String, Sendable {
        case inboxList = "10050"
        case registration
        case defaults = "default"
    }

    /// What is known of one of a user's relays (`watch.relays[].state`). The plan decides
    /// `watching`, `refused` and `overLimit`; the connection reports the others.
    package enum RelayState: String, Sendable {
        case watching
        case authRequired = "auth-required"
        case refused
        case unreachable
        case overLimit = "over-limit"
    }

    /// What one user's devices and list say.
    package struct UserRelays: Sendable, Equatable {
        /// The relays of the user's newest kind 10050 list; nil when none was seen. An empty list
        /// counts as none.
        package var inboxList: [RelayURL]?
        /// The union of the user's relay-watch devices' registered `relays`, in order.
        package var registration: [RelayURL]

        package init(inboxList: [RelayURL]? = nil, registration: [RelayURL] = []) {
            self.inboxList = inboxList
            self.registration = registration
        }

        /// Adds one device's registered relays (stored normal forms) after those already there,
        /// each relay once.
        package mutating func addRegistered(_ relays: [String]) {
            for url in relays.compactMap({ try? RelayURL($0) }) where !registration.contains(url) { registration.append(url) }
        }
    }

    package struct Assignment: Sendable, Equatable {
        package var url: String
        package var state: RelayState
    }

    package struct UserWatch: Sendable, Equatable {
        package var source: Source
        package var relays: [Assignment]
    }

    /// Relays beyond `RELAYS`, each with the pubkeys it is watched for.
    package private(set) var extraRelays: [String: Set<String>] = [:]
    package private(set) var users: [String: UserWatch] = [:]
    /// Users' relays that lost to the instance-wide cap: not connected, `overLimit` for every
    /// user that lists them.
    package private(set) var overLimitRelays: Set<String> = []

    /// Nothing beyond `RELAYS`.
    package static let empty = RelayWatchPlan(
        users: [:], defaults: [], maxRelays: 0, maxRelaysPerUser: 0, policy: RelayAddressPolicy(allowsPrivate: false))

    package init(
        users input: [String: UserRelays], defaults: [String], maxRelays: Int, maxRelaysPerUser: Int, policy: RelayAddressPolicy,
        served: Set<String> = []
    ) {
        let defaultSet = Set(defaults)
        // Each user's source and list, with the plan's verdict on each relay so far.
        var candidates: [String: [String]] = [:]
        for (pubkey, relays) in input {
            let (source, list): (Source, [RelayURL]) =
                if let inbox = relays.inboxList, !inbox.isEmpty {
                    (.inboxList, inbox)
                } else if !relays.registration.isEmpty {
                    (.registration, relays.registration)
                } else {
                    (.defaults, [])
                }
            var assignments: [Assignment] = []
            var own = 0
            for url in list where !assignments.contains(where: { $0.url == url.description }) {
                let text = url.description
                // `RELAYS`, and the gateway's own inbox relay, which pushes what it takes itself.
                if defaultSet.contains(text) || served.contains(text) {
                    assignments.append(Assignment(url: text, state: .watching))
                } else if policy.refusal(for: url) != nil {
                    assignments.append(Assignment(url: text, state: .refused))
                } else if own >= maxRelaysPerUser {
                    assignments.append(Assignment(url: text, state: .overLimit))
                } else {
                    own += 1
                    assignments.append(Assignment(url: text, state: .watching))
                    candidates[text, default: []].append(pubkey)
                }
            }
            if source == .defaults { assignments = defaults.map { Assignment(url: $0, state: .watching) } }
            users[pubkey] = UserWatch(source: source, relays: assignments)
        }
        // The instance-wide cap: the relays most users need first.
        let slots = max(0, maxRelays - defaultSet.count)
        let ranked = candidates.sorted { ($0.value.count, $1.key) > ($1.value.count, $0.key) }
        for (index, (url, pubkeys)) in ranked.enumerated() {
            if index < slots {
                extraRelays[url] = Set(pubkeys)
            } else {
                overLimitRelays.insert(url)
                for pubkey in pubkeys {
                    guard var watch = users[pubkey], let at = watch.relays.firstIndex(where: { $0.url == url }) else { continue }
                    watch.relays[at].state = .overLimit
                    users[pubkey] = watch
                }
            }
        }
    }
}
