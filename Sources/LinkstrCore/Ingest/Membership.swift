/// A session's members as half-open intervals `[start, end)` per member (linkstr-wire.md §3), so
/// "was X a member when this was sent" has an answer for every point in time.
public struct Membership: Sendable, Equatable {
    public struct Interval: Sendable, Equatable {
        public var start: Int64
        /// Nil while the member is active.
        public var end: Int64?

        public func contains(_ time: Int64) -> Bool { start <= time && end.map { time < $0 } ?? true }
    }

    /// Member pubkey (hex) → its intervals, oldest first.
    public private(set) var intervals: [String: [Interval]] = [:]

    public init() {}

    /// Members active now (an open interval).
    public var active: Set<String> { Set(intervals.filter { $0.value.last?.end == nil }.keys) }

    /// Everyone who was ever a member.
    public var everKnown: Set<String> { Set(intervals.keys) }

    public func isActive(_ member: String, at time: Int64) -> Bool {
        intervals[member]?.contains { $0.contains(time) } ?? false
    }

    public func isActiveNow(_ member: String) -> Bool { intervals[member]?.last?.end == nil && intervals[member] != nil }

    /// The active set becomes exactly `snapshot` from `time` on: members left out are closed at
    /// `time`, new ones open at `time`. Callers apply snapshots in the order rule's order, so
    /// `time` is never before an existing boundary.
    public mutating func apply(snapshot: Set<String>, at time: Int64) {
        for (member, list) in intervals where list.last?.end == nil && !snapshot.contains(member) {
            var closed = list
            closed[closed.count - 1].end = time
            intervals[member] = closed
        }
        for member in snapshot where !isActiveNow(member) {
            intervals[member, default: []].append(Interval(start: time, end: nil))
        }
    }
}
