import Foundation
import Synchronization

/// Wakes idle delivery loops when this instance has just queued something, so a push is claimed
/// at once instead of at the next idle poll (jobs queued by other instances still wait for the
/// poll, at most `DeliveryWorker.idleInterval`).
public final class DeliveryWakeup: Sendable {
    private let waiters = Mutex<[UUID: CheckedContinuation<Void, Never>]>([:])

    public init() {}

    /// Wakes every waiting loop.
    public func signal() {
        let waiting = waiters.withLock { waiters in
            defer { waiters.removeAll() }
            return Array(waiters.values)
        }
        for waiter in waiting { waiter.resume() }
    }

    /// Returns after `timeout` or at the next `signal()`, whichever comes first.
    func wait(upTo timeout: Duration) async {
        let id = UUID()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            waiters.withLock { $0[id] = continuation }
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                self?.resume(id)
            }
        }
    }

    private func resume(_ id: UUID) {
        waiters.withLock { $0.removeValue(forKey: id) }?.resume()
    }
}
