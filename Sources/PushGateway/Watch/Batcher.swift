import NostrProtocol

/// Items waiting to be written to the database: producers add one at a time (a lock, not an actor
/// hop: for gift-wrap sightings this runs once per wrap); a writer loop takes what has gathered,
/// up to a batch, in one go, so a burst costs one statement per batch, not per item.
///
/// At most `limit` items wait for `send` in each lane: past that the producer waits until the
/// writer takes a batch. For sightings that is what stops the relay watcher's consumers, and
/// through them the reading of relays' sockets, while PostgreSQL is slow or down, instead of
/// holding every wrap a relay sends in memory. `add` never waits, for producers whose count is
/// bounded by construction (live marks: one per subscription and relay).
///
/// Lanes keep one kind of producer from holding another up: each lane has its own room, so a
/// full lane makes only its own producers wait, and a batch takes lane 0 first, keeping a quarter
/// of each batch for every later lane that has items (so lane 0 cannot starve them either). The
/// relay watcher puts `RELAYS` in lane 0 and users' own relays, which users choose and may run
/// hostile, in lane 1.
package final class Batcher<Element: Sendable>: Sendable {
    private struct Lane {
        /// The items from `head` on are pending. Those before it were taken, and are dropped once
        /// they are half the array: a batch taken from a lane that fell far behind costs the
        /// batch, not a shift of everything behind it.
        private var items: [Element] = []
        private var head = 0
        /// Producers waiting for room, in order; resumed with false when the batcher closes.
        var senders: [(element: Element, continuation: CheckedContinuation<Bool, Never>)] = []

        var count: Int { items.count - head }
        var isEmpty: Bool { head == items.count }

        mutating func append(_ element: Element) { items.append(element) }

        /// Moves up to `room` items from the front onto `batch`.
        mutating func take(_ room: Int, into batch: inout [Element]) {
            let taken = Swift.min(room, count)
            guard taken > 0 else { return }
            // The common case, a whole lane into an empty batch: the lane's array is handed over
            // instead of copied out element by element.
            if batch.isEmpty, head == 0, taken == items.count {
                swap(&batch, &items)
                items.reserveCapacity(batch.count)
                return
            }
            batch += items[head..<(head + taken)]
            head += taken
            if head == items.count {
                items.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= items.count / 2 {
                items.removeFirst(head)
                head = 0
            }
        }
    }

    private struct State {
        var lanes: [Lane]
        var waiters: [CheckedContinuation<Void, Never>] = []
        var closed = false

        var isEmpty: Bool { lanes.allSatisfy(\.isEmpty) }
    }

    let limit: Int
    private let state: Locked<State>

    private enum Step {
        case batch([Element], admitted: [CheckedContinuation<Bool, Never>])
        case finished
        case wait
    }

    private enum Admission {
        /// Added; the writer waiting for work, if any, is to be woken.
        case added(CheckedContinuation<Void, Never>?)
        case closed
        case full
    }

    package init(limit: Int = .max, lanes: Int = 1) {
        self.limit = max(limit, 1)
        self.state = Locked(State(lanes: Array(repeating: Lane(), count: max(lanes, 1))))
    }

    /// Adds `element` to lane 0 whatever is pending.
    package func add(_ element: Element) {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            state.lanes[0].append(element)
            return state.waiters.isEmpty ? nil : state.waiters.removeFirst()
        }
        waiter?.resume()
    }

    /// Adds `element` to `lane`, first waiting while `limit` items are pending there; false when
    /// the batcher closed before it could be added (the item is not written).
    @discardableResult
    package func send(_ element: Element, lane: Int = 0) async -> Bool {
        let admission: Admission = state.withLock { state in
            if state.closed { return .closed }
            guard state.lanes[lane].count < limit, state.lanes[lane].senders.isEmpty else { return .full }
            state.lanes[lane].append(element)
            return .added(state.waiters.isEmpty ? nil : state.waiters.removeFirst())
        }
        switch admission {
        case .added(let waiter):
            waiter?.resume()
            return true
        case .closed:
            return false
        case .full:
            return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let resumeNow: Bool? = state.withLock { state in
                    if state.closed { return false }
                    // A batch may have been taken since the check above.
                    if state.lanes[lane].count < limit, state.lanes[lane].senders.isEmpty {
                        state.lanes[lane].append(element)
                        return true
                    }
                    state.lanes[lane].senders.append((element, continuation))
                    return nil
                }
                if let resumeNow { continuation.resume(returning: resumeNow) }
            }
        }
    }

    /// The next batch, at most `max` items; nil once closed and drained.
    package func next(max: Int) async -> [Element]? {
        while true {
            let step: Step = state.withLock { state in
                if !state.isEmpty {
                    let batch = Self.take(max: max, from: &state.lanes)
                    // Waiting producers take the room the batch made, in order.
                    var admitted: [CheckedContinuation<Bool, Never>] = []
                    for index in state.lanes.indices {
                        while state.lanes[index].count < limit, !state.lanes[index].senders.isEmpty {
                            let sender = state.lanes[index].senders.removeFirst()
                            state.lanes[index].append(sender.element)
                            admitted.append(sender.continuation)
                        }
                    }
                    return .batch(batch, admitted: admitted)
                }
                return state.closed ? .finished : .wait
            }
            switch step {
            case .batch(let batch, let admitted):
                for sender in admitted { sender.resume(returning: true) }
                return batch
            case .finished: return nil
            case .wait:
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state in
                        // Something may have arrived (or the batcher closed) since the check above.
                        if !state.isEmpty || state.closed { return true }
                        state.waiters.append(continuation)
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }
    }

    /// Up to `max` items, lane 0 first, each later lane that has items kept a quarter of the batch
    /// (at least one item) so that a busy lane 0 never starves it; room a lane leaves unused goes
    /// to the lanes after it.
    private static func take(max: Int, from lanes: inout [Lane]) -> [Element] {
        let share = Swift.max(1, max / 4)
        var reserved = lanes.dropFirst().reduce(0) { $0 + Swift.min($1.count, share) }
        var batch: [Element] = []
        for index in lanes.indices {
            if index > 0 { reserved -= Swift.min(lanes[index].count, share) }
            lanes[index].take(Swift.max(0, max - batch.count - reserved), into: &batch)
        }
        return batch
    }

    /// Nothing more will be added; waiting loops drain what is left, then end. Producers still
    /// waiting for room are turned away.
    package func close() {
        let (waiting, senders) = state.withLock { state in
            state.closed = true
            defer {
                state.waiters.removeAll()
                for index in state.lanes.indices { state.lanes[index].senders.removeAll() }
            }
            return (state.waiters, state.lanes.flatMap { $0.senders.map(\.continuation) })
        }
        for waiter in waiting { waiter.resume() }
        for sender in senders { sender.resume(returning: false) }
    }

    /// Items pending in every lane.
    package var count: Int { state.withLock { $0.lanes.reduce(0) { $0 + $1.count } } }

    /// Producers waiting for room, in every lane.
    package var waitingSenders: Int { state.withLock { $0.lanes.reduce(0) { $0 + $1.senders.count } } }
}
