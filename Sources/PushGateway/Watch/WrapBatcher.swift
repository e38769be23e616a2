import Synchronization

/// Sightings waiting to be recorded. Relay consumers add one at a time (a lock, not an actor hop:
/// this runs once per wrap); ingest loops take what has gathered, up to a batch, in one go, so a
/// burst costs one statement per batch, not per wrap.
final class WrapBatcher: Sendable {
    private struct State {
        var pending: [WrapSighting] = []
        var waiters: [CheckedContinuation<Void, Never>] = []
        var closed = false
    }

    private let state = Mutex(State())

    func add(_ sighting: WrapSighting) {
        let waiter: CheckedContinuation<Void, Never>? = state.withLock { state in
            state.pending.append(sighting)
            return state.waiters.isEmpty ? nil : state.waiters.removeFirst()
        }
        waiter?.resume()
    }

    /// The next batch; nil once closed and drained.
    func next(max: Int) async -> [WrapSighting]? {
        while true {
            enum Step { case batch([WrapSighting]), finished, wait }
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

    /// No more sightings will come; waiting loops drain what is left, then end.
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
