public import LinkstrWire
import NostrProtocol

/// Valid messages that arrived before what they depend on (docs/linkstr-wire.md §3), held in memory and
/// handed back when that dependency changes. Bounded: past `limit` new messages are refused, so a
/// flood of messages for sessions that never arrive cannot grow memory without end.
public struct PendingMessages: Sendable {
    /// What a pending message waits for.
    public enum Dependency: Sendable, Hashable {
        /// The session to exist, or its membership to change (R4, R5, R3 without a name).
        case session(String)
        /// The root post to arrive (R8, R9).
        case root(String)
    }

    public struct Entry: Sendable, Equatable {
        public var message: LinkstrMessage
        public var origin: IngestOrigin
        /// Every wrap that carried this rumor while it waited (R7: duplicates merge, also while pending).
        public var wrapIDs: Set<String>
        public var reason: String
    }

    public static let defaultLimit = 20_000

    public let limit: Int
    private var entries: [Dependency: [String: Entry]] = [:]
    private var dependencyOfRumor: [String: Dependency] = [:]

    public init(limit: Int = PendingMessages.defaultLimit) {
        self.limit = limit
    }

    public var count: Int { dependencyOfRumor.count }

    public func contains(rumorID: String) -> Bool { dependencyOfRumor[rumorID] != nil }

    /// Every held entry, in the order rule's order (for tests and diagnostics).
    public var all: [Entry] { entries.values.flatMap(\.values).sorted { EventOrder($0.message) < EventOrder($1.message) } }

    /// Holds `entry` until `dependency` changes; false when the limit is reached.
    mutating func hold(_ entry: Entry, until dependency: Dependency) -> Bool {
        let rumorID = entry.message.rumorID.hex
        if let previous = dependencyOfRumor[rumorID], var existing = entries[previous]?[rumorID] {
            // The same rumor waits again (after a retry), perhaps for something else now.
            existing.wrapIDs.formUnion(entry.wrapIDs)
            existing.reason = entry.reason
            entries[previous]?[rumorID] = nil
            entries[dependency, default: [:]][rumorID] = existing
            dependencyOfRumor[rumorID] = dependency
            return true
        }
        guard count < limit else { return false }
        entries[dependency, default: [:]][rumorID] = entry
        dependencyOfRumor[rumorID] = dependency
        return true
    }

    /// Adds a wrap id to a held rumor (R7); false when the rumor is not held.
    mutating func merge(wrapID: String, into rumorID: String) -> Bool {
        guard let dependency = dependencyOfRumor[rumorID] else { return false }
        entries[dependency]?[rumorID]?.wrapIDs.insert(wrapID)
        return true
    }

    /// Removes and returns what waits for `dependency`, oldest first.
    mutating func release(_ dependency: Dependency) -> [Entry] {
        guard let released = entries.removeValue(forKey: dependency) else { return [] }
        for rumorID in released.keys { dependencyOfRumor[rumorID] = nil }
        return released.values.sorted { EventOrder($0.message) < EventOrder($1.message) }
    }

    /// Drops every held message of `sessionID` (R10: a deleted session's dependents go).
    mutating func drop(session sessionID: String) {
        for (dependency, held) in entries {
            let doomed = held.filter { $0.value.message.payload.conversationID == sessionID }.keys
            guard !doomed.isEmpty else { continue }
            for rumorID in doomed {
                entries[dependency]?[rumorID] = nil
                dependencyOfRumor[rumorID] = nil
            }
            if entries[dependency]?.isEmpty == true { entries[dependency] = nil }
        }
    }

    /// Drops the reactions waiting for `rootID` (R9: a validated delete clears them).
    mutating func dropReactions(waitingFor rootID: String) {
        guard let held = entries[.root(rootID)] else { return }
        for (rumorID, entry) in held where entry.message.payload.kind == .reaction {
            entries[.root(rootID)]?[rumorID] = nil
            dependencyOfRumor[rumorID] = nil
        }
        if entries[.root(rootID)]?.isEmpty == true { entries[.root(rootID)] = nil }
    }
}
