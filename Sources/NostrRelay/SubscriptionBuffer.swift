import NostrProtocol

/// The queue between a connection's reading task and one subscription's consumer. It holds no
/// limit of its own: the connection's `InboundBudget` bounds every subscription's queue together,
/// and each item carries the bytes it reserved there, given back when the consumer takes it (or
/// when the consumer is gone and the item is thrown away).
final class SubscriptionBuffer: Sendable {
    private struct State {
        var items: [(event: SubscriptionEvent, cost: Int)] = []
        var head = 0
        var consumer: CheckedContinuation<Void, Never>?
        /// Nothing more comes (unsubscribed, or the connection stopped): what is queued is still
        /// read, then the stream ends.
        var finished = false
        /// The consumer stopped reading (its task was cancelled, or it dropped the stream): queued
        /// items are thrown away and new ones refused, so the reader is never held up for it.
        var terminated = false

        var hasItems: Bool { head < items.count }
    }

    private enum Step {
        case item(SubscriptionEvent, cost: Int)
        case end
        case wait
    }

    let budget: InboundBudget
    private let state = Locked(State())

    init(budget: InboundBudget) {
        self.budget = budget
    }

    /// Items waiting for the consumer.
    var count: Int { state.withLock { $0.items.count - $0.head } }

    /// Queues `event`, which holds `cost` bytes of the budget; false when the subscription is over
    /// (the caller gives the bytes back).
    func append(_ event: SubscriptionEvent, cost: Int) -> Bool {
        let consumer = state.withLock { state -> CheckedContinuation<Void, Never>?? in
            guard !state.finished, !state.terminated else { return .none }
            state.items.append((event, cost))
            defer { state.consumer = nil }
            return .some(state.consumer)
        }
        guard let consumer else { return false }
        consumer?.resume()
        return true
    }

    /// No more items: the consumer reads what is queued, then the stream ends.
    func finish() {
        let consumer = state.withLock { state in
            state.finished = true
            defer { state.consumer = nil }
            return state.consumer
        }
        consumer?.resume()
    }

    /// The consumer is gone: queued items are dropped and their bytes given back.
    func terminate() {
        let (consumer, cost) = state.withLock { state in
            state.terminated = true
            let cost = state.items[state.head...].reduce(0) { $0 + $1.cost }
            state.items.removeAll()
            state.head = 0
            defer { state.consumer = nil }
            return (state.consumer, cost)
        }
        budget.release(cost)
        consumer?.resume()
    }

    /// The next item; nil once finished and drained, or terminated. Cancelling the waiting task
    /// terminates the subscription's stream, as it does an `AsyncStream`.
    func next() async -> SubscriptionEvent? {
        while true {
            let step: Step = state.withLock { state in
                if state.hasItems {
                    let item = state.items[state.head]
                    state.head += 1
                    // Compact now and then, not on every read.
                    if state.head >= 1024, state.head * 2 >= state.items.count {
                        state.items.removeFirst(state.head)
                        state.head = 0
                    }
                    return .item(item.event, cost: item.cost)
                }
                return state.finished || state.terminated ? .end : .wait
            }
            switch step {
            case .item(let event, let cost):
                budget.release(cost)
                return event
            case .end:
                return nil
            case .wait:
                await withTaskCancellationHandler {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        let resumeNow = state.withLock { state in
                            if state.hasItems || state.finished || state.terminated { return true }
                            precondition(state.consumer == nil, "a subscription stream has one consumer at a time")
                            state.consumer = continuation
                            return false
                        }
                        if resumeNow { continuation.resume() }
                    }
                } onCancel: {
                    terminate()
                }
            }
        }
    }
}
