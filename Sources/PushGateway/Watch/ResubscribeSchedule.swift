/// When each changed chunk's REQ goes out: at most once per `interval` per chunk (and so per
/// relay, since a chunk's REQ goes to every relay at once), with whatever changed in between
/// sent together.
///
/// A change to a chunk whose REQ has not been sent within `interval` goes out at once, so a lone
/// registration is watched without delay; changes to a chunk sent moments before wait until its
/// interval is over and then go out as one REQ built from the chunk as it is then. A burst of a
/// thousand registrations into one chunk is two REQs per relay, not a thousand (each REQ makes a
/// relay run the chunk's query again, and a new subscription id replays its history).
package struct ResubscribeSchedule: Sendable, Equatable {
    let interval: Duration
    /// When each chunk's REQ last went out.
    private(set) var lastSent: [Int: ContinuousClock.Instant] = [:]
    /// Chunks changed since their REQ last went out.
    package private(set) var pending: Set<Int> = []

    package init(interval: Duration) {
        self.interval = interval
    }

    /// `chunks` changed (or must be issued again).
    package mutating func note(_ chunks: some Sequence<Int>) {
        pending.formUnion(chunks)
    }

    /// The pending chunks that may go out at `now`, in order; they count as sent at `now`.
    package mutating func takeDue(at now: ContinuousClock.Instant) -> [Int] {
        let due = pending.filter { chunk in lastSent[chunk].map { now - $0 >= interval } ?? true }.sorted()
        for chunk in due {
            pending.remove(chunk)
            lastSent[chunk] = now
        }
        return due
    }

    /// When the next pending chunk may go out, as seen at `now`; nil when nothing is pending.
    package func nextDue(now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        pending.map { chunk in lastSent[chunk].map { max(now, $0 + interval) } ?? now }.min()
    }
}
