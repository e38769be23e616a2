import NostrProtocol

/// The bytes of relay messages a connection holds for its subscriptions' consumers, at most
/// `limit`. The reading task reserves a message's bytes before handing it over and waits while
/// there is no room; a consumer gives them back as it takes the message. While the reader waits
/// it does not ask the WebSocket for the next message, so SwiftNIO stops reading the socket and
/// TCP makes the relay wait too: whatever a relay sends, and however fast, this is what the
/// connection holds (plus the frames NIO has already read).
///
/// One budget per connection rather than per subscription, because a relay chooses which
/// subscription each event goes to: with a limit per subscription it could fill every one.
package final class InboundBudget: Sendable {
    private struct Waiter {
        let id: UInt64
        let cost: Int
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var used = 0
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0

        func fits(_ cost: Int, limit: Int) -> Bool { used == 0 || used + cost <= limit }
    }

    let limit: Int
    private let state = Locked(State())

    package init(limit: Int) {
        self.limit = max(limit, 1)
    }

    /// Bytes held now.
    package var used: Int { state.withLock { $0.used } }

    /// Readers waiting for room.
    package var waiting: Int { state.withLock { $0.waiters.count } }

    /// Reserves `cost` bytes when they fit (or nothing is held: one message larger than the limit
    /// still passes, alone) and nobody waits before it; false otherwise.
    package func tryReserve(_ cost: Int) -> Bool {
        state.withLock { state in
            guard state.waiters.isEmpty, state.fits(cost, limit: limit) else { return false }
            state.used += cost
            return true
        }
    }

    /// Reserves `cost` bytes, waiting for room; false when the waiting task was cancelled.
    package func reserve(_ cost: Int) async -> Bool {
        if tryReserve(cost) { return true }
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let resumeNow: Bool? = state.withLock { state in
                    if Task.isCancelled { return false }
                    // Room may have been made since `tryReserve`.
                    if state.waiters.isEmpty, state.fits(cost, limit: limit) {
                        state.used += cost
                        return true
                    }
                    state.waiters.append(Waiter(id: id, cost: cost, continuation: continuation))
                    return nil
                }
                if let resumeNow { continuation.resume(returning: resumeNow) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(returning: false)
        }
    }

    /// Gives `cost` bytes back and lets waiters in, in order, while they fit.
    package func release(_ cost: Int) {
        guard cost > 0 else { return }
        let admitted = state.withLock { state -> [Waiter] in
            state.used = max(0, state.used - cost)
            var admitted: [Waiter] = []
            while let first = state.waiters.first, state.fits(first.cost, limit: limit) {
                state.used += first.cost
                admitted.append(state.waiters.removeFirst())
            }
            return admitted
        }
        for waiter in admitted { waiter.continuation.resume(returning: true) }
    }
}
