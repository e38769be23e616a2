/// A change to `watch_live` (which pubkeys reached EOSE on which relay) waiting for the live-mark
/// loop. Marks and forgets share one ordered queue: a forget queued after a mark must win, or a
/// pubkey that stopped being watched (unregistered, account erased) could be written back as live
/// by a mark that was still waiting, and a later registration would take its unclaimed wraps for
/// live ones instead of history.
package enum LiveWrite: Sendable, Equatable {
    /// `pubkeys` reached EOSE on `relay`.
    case mark(relay: String, pubkeys: [String])
    /// `pubkeys` are no longer watched: forgotten on every relay.
    case forget([String])
    /// `pubkeys` are no longer watched on `relay` (it left their inbox list): forgotten there.
    case forgetOn(relay: String, pubkeys: [String])

    /// For logs: which kind of write failed.
    var kind: String {
        switch self {
        case .mark: "mark"
        case .forget, .forgetOn: "forget"
        }
    }

    /// The statements for `writes`, taken in order, with as few statements as order allows: marks
    /// gather per relay (first-seen relay order) until a forget; a forget drops the gathered marks
    /// it covers (they would be deleted right after being written), then writes them out before
    /// itself, so each step runs after everything queued before it.
    package static func plan(_ writes: [LiveWrite]) -> [LiveWrite] {
        var steps: [LiveWrite] = []
        var relays: [String] = []
        var gathered: [String: [String]] = [:]
        func flush() {
            for relay in relays {
                if let pubkeys = gathered[relay], !pubkeys.isEmpty { steps.append(.mark(relay: relay, pubkeys: pubkeys)) }
            }
            relays.removeAll()
            gathered.removeAll()
        }
        for write in writes {
            switch write {
            case .mark(let relay, let pubkeys):
                guard !pubkeys.isEmpty else { continue }
                if gathered[relay] == nil { relays.append(relay) }
                gathered[relay, default: []] += pubkeys
            case .forget(let pubkeys), .forgetOn(_, let pubkeys):
                guard !pubkeys.isEmpty else { continue }
                let forgotten = Set(pubkeys)
                let covered: [String] = if case .forgetOn(let relay, _) = write { [relay] } else { relays }
                for relay in covered { gathered[relay]?.removeAll(where: forgotten.contains) }
                flush()
                steps.append(write)
            }
        }
        flush()
        return steps
    }
}
