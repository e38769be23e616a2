import NIOCore
import NostrProtocol

/// The queue between a connection's reading task and one subscription's consumer. It holds no
/// limit of its own: the connection's `InboundBudget` bounds every subscription's queue together,
/// and each item carries the bytes it reserved there, given back when the consumer takes it (or
/// when the consumer is gone and the item is thrown away). The connection queues
/// `SubscriptionEvent`s; generic so that a test can queue objects and watch them go.
package final class SubscriptionBuffer<Element: Sendable>: Sendable {
    private struct State {
        /// A ring: taking an item frees its slot at once, so an event the consumer has taken is
        /// not kept alive behind it (the budget no longer counts it).
        var items = CircularBuffer<(element: Element, cost: Int)>()
        var consumer: CheckedContinuation<Void, Never>?
        /// Nothing more comes (unsubscribed, or the connection stopped): what is queued is still
        /// read, then the stream ends.
        var finished = false
        /// The consumer stopped reading (its task was cancelled, or it dropped the stream): queued
        /// items are thrown away and new ones refused, so the reader is never held up for it.
        var terminated = false

        var hasItems: Bool { !items.isEmpty }
    }

    private enum Step {
        case item(Element, cost: Int)
        case end
        case wait
    }

    package let budget: InboundBudget
    private let state = Locked(State())

    package init(budget: InboundBudget) {
        self.budget = budget
    }

    /// Items waiting for the consumer.
    package var count: Int { state.withLock { $0.items.count } }

    /// Queues `element`, which holds `cost` bytes of the budget; false when the subscription is
    /// over (the caller gives the bytes back).
    package func append(_ element: Element, cost: Int) -> Bool {
        let consumer = state.withLock { state -> CheckedContinuation<Void, Never>?? in
            guard !state.finished, !state.terminated else { return .none }
            state.items.append((element, cost))
            defer { state.consumer = nil }
            return .some(state.consumer)
        }
        guard let consumer else { return false }
        consumer?.resume()
        return true
    }

    /// No more items: the consumer reads what is queued, then the stream ends.
    package func finish() {
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
            let cost = state.items.reduce(0) { $0 + $1.cost }
            state.items.removeAll()
            defer { state.consumer = nil }
            return (state.consumer, cost)
        }
        budget.release(cost)
        consumer?.resume()
    }

    /// The next item; nil once finished and drained, or terminated. Cancelling the waiting task
    /// terminates the subscription's stream, as it does an `AsyncStream`.
    package func next() async -> Element? {
        while true {
            let step: Step = state.withLock { state in
                if let item = state.items.popFirst() {
                    return .item(item.element, cost: item.cost)
                }
                return state.finished || state.terminated ? .end : .wait
            }
            switch step {
            case .item(let element, let cost):
                budget.release(cost)
                return element
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
