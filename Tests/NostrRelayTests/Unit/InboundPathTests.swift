import NostrProtocol
import NostrRelay
import Synchronization
import TestSupport
import Testing

/// The queue between a connection's reader and its subscriptions' consumers: a byte budget the
/// reader waits on, and per-subscription queues that give bytes back as consumers read.
struct InboundPathTests {
    static let event = SubscriptionEvent.endOfStoredEvents

    final class Order: Sendable {
        let admitted = Mutex<[Int]>([])
    }

    @Test func theBudgetAdmitsUpToItsLimitAndOneOversizedMessageAlone() {
        let budget = InboundBudget(limit: 100)
        #expect(budget.tryReserve(60))
        #expect(budget.tryReserve(40))
        #expect(!budget.tryReserve(1), "full")
        budget.release(100)
        #expect(budget.tryReserve(500), "larger than the limit, but nothing else is held")
        #expect(!budget.tryReserve(1))
        budget.release(500)
        #expect(budget.used == 0)
    }

    @Test(.timeLimit(.minutes(1))) func aReaderWaitsForRoomAndIsLetInInOrder() async {
        let budget = InboundBudget(limit: 100)
        #expect(budget.tryReserve(100))
        let order = Order()
        let first = Task { if await budget.reserve(50) { order.admitted.withLock { $0.append(1) } } }
        #expect(await eventually { budget.waiting == 1 })
        let second = Task { if await budget.reserve(50) { order.admitted.withLock { $0.append(2) } } }
        #expect(await eventually { budget.waiting == 2 })
        #expect(!budget.tryReserve(1), "a newcomer does not jump the queue")
        budget.release(100)
        await first.value
        await second.value
        #expect(order.admitted.withLock { $0 } == [1, 2])
        #expect(budget.used == 100)
    }

    @Test(.timeLimit(.minutes(1))) func aCancelledReaderStopsWaiting() async {
        let budget = InboundBudget(limit: 10)
        #expect(budget.tryReserve(10))
        let waiting = Task { await budget.reserve(5) }
        #expect(await eventually { budget.waiting == 1 })
        waiting.cancel()
        #expect(await waiting.value == false)
        #expect(budget.used == 10, "nothing reserved for it")
    }

    @Test func aConsumerGivesTheBytesBackAsItReads() async {
        let budget = InboundBudget(limit: 100)
        let buffer = SubscriptionBuffer<SubscriptionEvent>(budget: budget)
        let stream = SubscriptionStream(buffer: buffer)
        for _ in 0..<4 {
            #expect(budget.tryReserve(25))
            #expect(buffer.append(Self.event, cost: 25))
        }
        #expect(!budget.tryReserve(1))
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next() == Self.event)
        #expect(budget.used == 75)
        buffer.finish()
        #expect(!buffer.append(Self.event, cost: 0), "nothing after the end")
        for _ in 0..<3 { #expect(await iterator.next() == Self.event, "what was queued is still read") }
        #expect(await iterator.next() == nil)
        #expect(budget.used == 0)
    }

    @Test func aStreamNobodyReadsGivesItsBytesBack() {
        let budget = InboundBudget(limit: 100)
        let buffer = SubscriptionBuffer<SubscriptionEvent>(budget: budget)
        var stream: SubscriptionStream? = SubscriptionStream(buffer: buffer)
        #expect(budget.tryReserve(60))
        #expect(buffer.append(Self.event, cost: 60))
        #expect(budget.used == 60 && stream != nil)
        // The stream (and any iterator) is gone: its queue must not hold the reader up.
        stream = nil
        #expect(budget.used == 0)
        #expect(!buffer.append(Self.event, cost: 1))
    }

    @Test(.timeLimit(.minutes(1))) func cancellingTheConsumerEndsTheStreamAndFreesItsQueue() async {
        let budget = InboundBudget(limit: 100)
        let buffer = SubscriptionBuffer<SubscriptionEvent>(budget: budget)
        let stream = SubscriptionStream(buffer: buffer)
        let consumer = Task { () -> Int in
            var count = 0
            for await _ in stream { count += 1 }
            return count
        }
        #expect(budget.tryReserve(10))
        #expect(buffer.append(Self.event, cost: 10))
        #expect(await eventually { buffer.count == 0 })
        consumer.cancel()
        #expect(await consumer.value == 1)
        #expect(!buffer.append(Self.event, cost: 1), "terminated")
        #expect(budget.used == 0)
    }

    /// An item the consumer has taken is not kept alive by the queue: a relay could otherwise
    /// hold memory the budget no longer counts (once, up to a thousand events in every
    /// subscription until the queue compacted).
    @Test func anItemTheConsumerTookIsNotKeptByTheQueue() async {
        final class Item: Sendable {}
        let budget = InboundBudget(limit: 1 << 20)
        let buffer = SubscriptionBuffer<Item>(budget: budget)
        var taken: [Weak] = []
        for _ in 0..<100 {
            #expect(budget.tryReserve(100))
            #expect(buffer.append(Item(), cost: 100))
            guard let item = await buffer.next() else {
                Issue.record("the queue ended")
                return
            }
            taken.append(Weak(item))
        }
        #expect(taken.allSatisfy { $0.object == nil }, "\(taken.filter { $0.object != nil }.count) of 100 taken items still alive")
        #expect(budget.used == 0)
    }

    struct Weak {
        weak var object: AnyObject?
        init(_ object: AnyObject) { self.object = object }
    }
}
