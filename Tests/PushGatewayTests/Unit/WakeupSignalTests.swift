import NostrProtocol
import PushGateway
import TestSupport
import Testing

/// Idle delivery loops poll in turn: each tick wakes only the loop that has waited longest, and a
/// signal (work queued here) wakes every loop. The ticker's interval is an hour here, so every
/// wake-up below is the test's own; a regression fails at the time limit instead of waiting for it.
@Suite(.timeLimit(.minutes(1)))
struct WakeupSignalTests {
    /// Starts `count` waiters one after another (each registered before the next starts), each
    /// noting its number in `woken` when it returns.
    static func startWaiters(
        _ count: Int, on wakeup: WakeupSignal, into woken: Locked<[Int]>, group: inout DiscardingTaskGroup
    ) async {
        for waiter in 0..<count {
            group.addTask {
                await wakeup.wait()
                woken.withLock { $0.append(waiter) }
            }
            _ = await eventually(within: 5) { wakeup.waiting == waiter + 1 }
        }
    }

    @Test func aTickWakesTheOldestWaiterOnlyAndASignalWakesEveryOther() async {
        let wakeup = WakeupSignal(interval: .seconds(3600))
        let woken = Locked<[Int]>([])
        await withDiscardingTaskGroup { group in
            await Self.startWaiters(3, on: wakeup, into: woken, group: &group)
            #expect(wakeup.waiting == 3)

            wakeup.wakeOldest()
            #expect(wakeup.waiting == 2)
            #expect(await eventually(within: 5) { woken.withLock { $0 } == [0] })

            wakeup.wakeOldest()
            #expect(wakeup.waiting == 1)
            #expect(await eventually(within: 5) { woken.withLock { $0 } == [0, 1] })

            // Work was queued here: every loop still waiting claims at once.
            wakeup.signal()
            #expect(wakeup.waiting == 0)
        }
        #expect(woken.withLock { $0 } == [0, 1, 2])
    }

    @Test func aTickWithNobodyWaitingWakesNobodyLater() async {
        let wakeup = WakeupSignal(interval: .seconds(3600))
        wakeup.wakeOldest()
        let woken = Locked<[Int]>([])
        await withDiscardingTaskGroup { group in
            await Self.startWaiters(2, on: wakeup, into: woken, group: &group)
            // The earlier tick was not kept for them.
            #expect(wakeup.waiting == 2)
            #expect(woken.withLock { $0 }.isEmpty)
            wakeup.signal()
        }
        #expect(woken.withLock { $0 }.sorted() == [0, 1])
    }

    /// On graceful shutdown every loop goes at once, and none sleeps again.
    @Test func stopWakesEveryWaiterAndLaterWaitsReturnAtOnce() async {
        let wakeup = WakeupSignal(interval: .seconds(3600))
        let woken = Locked<[Int]>([])
        await withDiscardingTaskGroup { group in
            await Self.startWaiters(3, on: wakeup, into: woken, group: &group)
            wakeup.stop()
            #expect(wakeup.waiting == 0)
        }
        #expect(woken.withLock { $0 }.sorted() == [0, 1, 2])
        #expect(await wakeup.wait() == .stopped)
        #expect(wakeup.waiting == 0)
    }

    /// A waiting task that is cancelled returns at once, and leaves the other waiters waiting;
    /// one cancelled before it waits does not wait at all.
    @Test func aCancelledWaiterReturnsAtOnce() async {
        let wakeup = WakeupSignal(interval: .seconds(3600))
        let other = Task { await wakeup.wait() }
        #expect(await eventually(within: 5) { wakeup.waiting == 1 })
        let waiter = Task { await wakeup.wait() }
        #expect(await eventually(within: 5) { wakeup.waiting == 2 })
        waiter.cancel()
        #expect(await waiter.value == .stopped)
        #expect(wakeup.waiting == 1, "the other waiter was woken too")
        wakeup.signal()
        #expect(await other.value == .signal)

        let early = Task {
            // Cancelled before it waits.
            while !Task.isCancelled { await Task.yield() }
            return await wakeup.wait()
        }
        early.cancel()
        #expect(await early.value == .stopped)
        #expect(wakeup.waiting == 0)
    }
}
