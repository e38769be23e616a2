import Synchronization

/// At most `limit` bodies run at once; the others wait their turn in arrival order. Bounds what a
/// transport's sends can hold at one time: sockets, blocked DNS lookups (endpoints clients
/// chose, for Web Push), tasks and memory.
final class ConcurrencyGate: Sendable {
    private struct State {
        var available: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    init(limit: Int) {
        state = Mutex(State(available: max(1, limit)))
    }

    func withPermit<Result: Sendable>(_ body: () async -> Result) async -> Result {
        await acquire()
        defer { release() }
        return await body()
    }

    private func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                guard state.available > 0 else {
                    state.waiting.append(continuation)
                    return false
                }
                state.available -= 1
                return true
            }
            if granted { continuation.resume() }
        }
    }

    /// Hands the permit straight to the first waiter, if any.
    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.available += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
