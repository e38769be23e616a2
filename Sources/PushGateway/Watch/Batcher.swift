import Synchronization

/// Items waiting to be written to the database: producers add one at a time (a lock, not an actor
/// hop: for gift-wrap sightings this runs once per wrap); a writer loop takes what has gathered,
/// up to a batch, in one go, so a burst costs one statement per batch, not per item.
final class Batcher<Element: Sendable>: Sendable {
    private struct State {
        var pending: [Element] = []
        var waiters: [CheckedContinuation<Void, Never>] = []
        var closed = false
    }

    private let state = Mutex(State())

    private enum Step {
        case batch([Element]), finished, wait
    }

    func add(_ element: Element) {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            state.pending.append(element)
            return state.waiters.isEmpty ? nil : state.waiters.removeFirst()
        }
        waiter?.resume()
    }

    /// The next batch; nil once closed and drained.
    func next(max: Int) async -> [Element]? {
        while true {
            let step: Step = state.withLock { state in
                if !state.pending.isEmpty {
                    let batch = Array(state.pending.prefix(max))
                    state.pending.removeFirst(batch.count)
                    return .batch(batch)
                }
                return state.closed ? .finished : .wait
            }
            switch step {
            case .batch(let batch): return batch
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

    /// Nothing more will be added; waiting loops drain what is left, then end.
    func close() {
        let waiting = state.withLock { state in
            state.closed = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiting { waiter.resume() }
    }

    var count: Int { state.withLock { $0.pending.count } }
}
