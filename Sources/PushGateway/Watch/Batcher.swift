import NostrProtocol

/// Items waiting to be written to the database: producers add one at a time (a lock, not an actor
/// hop: for gift-wrap sightings this runs once per wrap); a writer loop takes what has gathered,
/// up to a batch, in one go, so a burst costs one statement per batch, not per item.
///
/// At most `limit` items wait for `send`: past that the producer waits until the writer takes a
/// batch. For sightings that is what stops the relay watcher's consumers, and through them the
/// reading of relays' sockets, while PostgreSQL is slow or down, instead of holding every wrap a
/// relay sends in memory. `add` never waits, for producers whose count is bounded by
/// construction (live marks: one per subscription and relay).
package final class Batcher<Element: Sendable>: Sendable {
    private struct State {
        var pending: [Element] = []
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// Producers waiting for room, in order; resumed with false when the batcher closes.
        var senders: [(element: Element, continuation: CheckedContinuation<Bool, Never>)] = []
        var closed = false
    }

    let limit: Int
    private let state = Locked(State())

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

    package init(limit: Int = .max) {
        self.limit = max(limit, 1)
    }

    /// Adds `element` whatever is pending.
    package func add(_ element: Element) {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            state.pending.append(element)
            return state.waiters.isEmpty ? nil : state.waiters.removeFirst()
        }
        waiter?.resume()
    }

    /// Adds `element`, first waiting while `limit` items are pending; false when the batcher
    /// closed before it could be added (the item is not written).
    @discardableResult
    package func send(_ element: Element) async -> Bool {
        let admission: Admission = state.withLock { state in
            if state.closed { return .closed }
            guard state.pending.count < limit, state.senders.isEmpty else { return .full }
            state.pending.append(element)
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
                    if state.pending.count < limit, state.senders.isEmpty {
                        state.pending.append(element)
                        return true
                    }
                    state.senders.append((element, continuation))
                    return nil
                }
                if let resumeNow { continuation.resume(returning: resumeNow) }
            }
        }
    }

    /// The next batch; nil once closed and drained.
    package func next(max: Int) async -> [Element]? {
        while true {
            let step: Step = state.withLock { state in
                if !state.pending.isEmpty {
                    let batch = Array(state.pending.prefix(max))
                    state.pending.removeFirst(batch.count)
                    // Waiting producers take the room the batch made, in order.
                    var admitted: [CheckedContinuation<Bool, Never>] = []
                    while state.pending.count < limit, !state.senders.isEmpty {
                        let sender = state.senders.removeFirst()
                        state.pending.append(sender.element)
                        admitted.append(sender.continuation)
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
                        if !state.pending.isEmpty || state.closed { return true }
                        state.waiters.append(continuation)
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }
    }

    /// Nothing more will be added; waiting loops drain what is left, then end. Producers still
    /// waiting for room are turned away.
    package func close() {
        let (waiting, senders) = state.withLock { state in
            state.closed = true
            defer {
                state.waiters.removeAll()
                state.senders.removeAll()
            }
            return (state.waiters, state.senders.map(\.continuation))
        }
        for waiter in waiting { waiter.resume() }
        for sender in senders { sender.resume(returning: false) }
    }

    package var count: Int { state.withLock { $0.pending.count } }

    /// Producers waiting for room.
    package var waitingSenders: Int { state.withLock { $0.senders.count } }
}
