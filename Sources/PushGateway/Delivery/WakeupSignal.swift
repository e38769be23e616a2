import NostrProtocol

/// Wakes loops that wait for work: the idle delivery loops when this instance has just queued
/// something (so a push is claimed at once instead of at the next poll; jobs queued by other
/// instances wait for the poll), and the relay watcher's maintenance loop when a registration
/// changed.
///
/// Waiting registers a continuation and nothing else: one shared ticker resumes a waiter each
/// `interval`. (A timer per wait, cancelled or not, cost more than the deliveries themselves once
/// the relay watcher signalled hundreds of times a second.) A tick resumes only the waiter that
/// has waited longest, so idle loops poll in turn: four idle delivery loops poll five times a
/// second, not twenty (`DeliveryWorker`). A loop that found work wakes the next one itself.
public final class WakeupSignal: Sendable {
    /// What ended a wait.
    package enum Wake: Sendable, Equatable {
        /// `signal()`: work was queued here.
        case signal
        /// The ticker: time to poll.
        case tick
        /// `stop()`, or the waiting task was cancelled: time to go.
        case stopped
    }

    private struct State {
        /// Oldest first, each with the id its cancellation finds it by.
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Wake, Never>)] = []
        var nextID: UInt64 = 0
        var tickerStarted = false
        var stopped = false
    }

    private let state = Locked(State())
    private let interval: Duration

    public init(interval: Duration = .milliseconds(200)) {
        self.interval = interval
    }

    /// Wakes every waiting loop.
    public func signal() {
        resumeAll(.signal)
    }

    /// Wakes every waiting loop to go, and from now on every wait returns at once: on graceful
    /// shutdown, so that no loop sleeps through it until its turn at a tick.
    package func stop() {
        state.withLock { $0.stopped = true }
        resumeAll(.stopped)
    }

    private func resumeAll(_ wake: Wake) {
        let waiting = state.withLock { state in
            defer { state.waiters.removeAll(keepingCapacity: true) }
            return state.waiters
        }
        for waiter in waiting { waiter.continuation.resume(returning: wake) }
    }

    /// Wakes the loop that has waited longest, if any: what each tick does.
    package func wakeOldest() {
        let oldest = state.withLock { state in state.waiters.isEmpty ? nil : state.waiters.removeFirst() }
        oldest?.continuation.resume(returning: .tick)
    }

    /// How many loops wait now.
    package var waiting: Int { state.withLock { $0.waiters.count } }

    /// Returns at the next `signal()`, or at a tick once every loop that waited longer has had
    /// one (with one waiter, within `interval`); says which. Returns `.stopped` at once after
    /// `stop()` or when the task is cancelled.
    @discardableResult
    package func wait() async -> Wake {
        let (id, startTicker) = state.withLock { state in
            defer { state.tickerStarted = true }
            state.nextID += 1
            return (state.nextID, !state.tickerStarted)
        }
        if startTicker {
            let interval = self.interval
            // Ends once stopped, or when the wakeup is gone.
            Task { [weak self] in
                while true {
                    try? await Task.sleep(for: interval)
                    guard let self, !self.state.withLock({ $0.stopped }) else { return }
                    self.wakeOldest()
                }
            }
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Wake, Never>) in
                // Checked under the lock the cancellation handler takes, so a cancellation either
                // finds this waiter registered or is seen here.
                let resumeNow = state.withLock { state in
                    if state.stopped || Task.isCancelled { return true }
                    state.waiters.append((id, continuation))
                    return false
                }
                if resumeNow { continuation.resume(returning: .stopped) }
            }
        } onCancel: {
            let mine = state.withLock { state in
                state.waiters.firstIndex { $0.id == id }.map { state.waiters.remove(at: $0) }
            }
            mine?.continuation.resume(returning: .stopped)
        }
    }
}
