/// A session's members as half-open intervals `[start, end)` per member (docs/linkstr-wire.md §3), so
/// "was X a member when this was sent" has an answer for every point in time.
///
/// The intervals are derived from every member snapshot seen, kept in the order rule's order. A
/// snapshot that arrives late (relays deliver history newest first) never changes who is active
/// now, but it fills in the past, so content from then is judged the same whatever order it all
/// arrived in.
public struct Membership: Sendable, Equatable {
    public struct Interval: Sendable, Equatable {
        public var start: Int64
        /// Nil while the member is active.
        public var end: Int64?

        public init(start: Int64, end: Int64?) {
            self.start = start
            self.end = end
        }

        public func contains(_ time: Int64) -> Bool { start <= time && end.map { time < $0 } ?? true }
    }

    public struct Snapshot: Sendable, Equatable {
        public var order: EventOrder
        public var members: Set<String>

        public init(order: EventOrder, members: Set<String>) {
            self.order = order
            self.members = members
        }
    }

    /// Every snapshot seen, oldest first.
    public private(set) var snapshots: [Snapshot] = []
    /// Member pubkey (hex) → its intervals, oldest first.
    public private(set) var intervals: [String: [Interval]] = [:]

    public init(snapshots: [Snapshot] = []) {
        for snapshot in snapshots { insert(snapshot) }
    }

    /// Members active now (the newest snapshot).
    public var active: Set<String> { snapshots.last?.members ?? [] }

    /// Everyone who was ever a member.
    public var everKnown: Set<String> { Set(intervals.keys) }

    public func isActive(_ member: String, at time: Int64) -> Bool {
        intervals[member]?.contains { $0.contains(time) } ?? false
    }

    public func isActiveNow(_ member: String) -> Bool { active.contains(member) }

    /// Records that the active set was exactly `members` from `order` on (until the next
    /// snapshot). False when that snapshot was already known.
    @discardableResult
    public mutating func insert(_ snapshot: Snapshot) -> Bool {
        let index = snapshots.firstIndex { $0.order >= snapshot.order } ?? snapshots.endIndex
        if index < snapshots.endIndex, snapshots[index].order == snapshot.order { return false }
        snapshots.insert(snapshot, at: index)
        rebuildIntervals()
        return true
    }

    /// Convenience for a snapshot at `time` (tests and the core's own snapshots).
    public mutating func apply(snapshot members: Set<String>, at time: Int64, eventID: String = "") {
        insert(Snapshot(order: EventOrder(createdAt: time, eventID: eventID), members: members))
    }

    private mutating func rebuildIntervals() {
        var result: [String: [Interval]] = [:]
        var open: Set<String> = []
        for snapshot in snapshots {
            let time = snapshot.order.createdAt
            for member in open where !snapshot.members.contains(member) {
                result[member]![result[member]!.count - 1].end = time
            }
            for member in snapshot.members where !open.contains(member) {
                result[member, default: []].append(Interval(start: time, end: nil))
            }
            open = snapshot.members
        }
        // Two snapshots in the same second can leave an empty interval; it holds no time.
        intervals = result.mapValues { list in list.filter { interval in interval.end.map { $0 > interval.start } ?? true } }
    }
}
