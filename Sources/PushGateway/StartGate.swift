import NostrProtocol
package import ServiceLifecycle

/// Opens once, when the migrations have been applied at start-up. The services that query the
/// gateway's tables wait for it: run alongside the migrations, a delivery round's query on
/// `push_jobs` deadlocked with a migration's DDL on that table, and the failed migration ended
/// the process (seen once in CI).
package final class StartGate: Sendable {
    private struct State {
        var open = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextID = 0
    }

    private let state = Locked(State())

    package init() {}

    package func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    package var isOpen: Bool { state.withLock { $0.open } }

    /// Returns once open, or when the task is cancelled.
    package func wait() async {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if state.open || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}

/// Runs `service` once `gate` is open; ends without running it if the group shuts down first.
package struct StartsAfterGate: Service, CustomStringConvertible {
    let gate: StartGate
    let service: any Service

    package init(gate: StartGate, service: any Service) {
        self.gate = gate
        self.service = service
    }

    package var description: String { "\(type(of: service)) (after migrations)" }

    package func run() async throws {
        _ = await cancelWhenGracefulShutdown { await gate.wait() }
        guard gate.isOpen, !Task.isCancelled, !Task.isShuttingDownGracefully else { return }
        try await service.run()
    }
}
