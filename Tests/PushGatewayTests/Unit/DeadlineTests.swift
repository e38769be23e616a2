import PushGateway
import Synchronization
import Testing

/// `withDeadline`, which bounds every request's and probe's wait for PostgreSQL. The case that
/// matters is a body deaf to cancellation, as a statement in flight on a silent connection is.
@Suite struct DeadlineTests {
    /// Holds whoever waits until `release()`, ignoring cancellation, as PostgresNIO ignores it for
    /// a statement already sent.
    final class DeafGate: Sendable {
        private struct State {
            var released = false
            var waiters: [CheckedContinuation<Void, Never>] = []
        }

        private let state = Mutex(State())

        func wait() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state in
                    if state.released { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        }

        func release() {
            let waiters = state.withLock { state in
                state.released = true
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    final class Flag: Sendable {
        private let value = Mutex(false)
        func set() { value.withLock { $0 = true } }
        var isSet: Bool { value.withLock { $0 } }
    }

    @Test func aBodyThatIgnoresCancellationDoesNotHoldTheAnswer() async throws {
        let gate = DeafGate(), finished = Flag()
        // Releases the body eventually even if withDeadline wrongly waits for it, so a regression
        // fails the expectations below instead of hanging the run.
        let backstop = Task {
            try await Task.sleep(for: .seconds(20))
            gate.release()
        }
        defer {
            backstop.cancel()
            gate.release()
        }
        await #expect(throws: DeadlineExceeded.self) {
            try await withDeadline(.milliseconds(100)) {
                await gate.wait()
                finished.set()
                return 1
            }
        }
        #expect(!finished.isSet, "answered while the body was still waiting, not once it ended")
    }

    @Test func aQuickBodysResultAndErrorComeThrough() async throws {
        #expect(try await withDeadline(.seconds(30)) { 42 } == 42)
        #expect(try await withDeadline(.seconds(30)) { Int?.none } == nil, "a body's own nil is a result, not the deadline")
        struct Refused: Error {}
        await #expect(throws: Refused.self) { try await withDeadline(.seconds(30)) { () async throws -> Int in throw Refused() } }
    }

    @Test func theCallersCancellationAnswersAtOnceEvenWhileTheBodyIsDeaf() async throws {
        let gate = DeafGate(), finished = Flag()
        defer { gate.release() }
        let caller = Task {
            try await withDeadline(.seconds(60)) {
                await gate.wait()
                finished.set()
                return 1
            }
        }
        try await Task.sleep(for: .milliseconds(50))
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
        #expect(!finished.isSet)
    }

    @Test func cancelledBeforeItStartsItAnswersCancelled() async throws {
        let caller = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await withDeadline(.seconds(60)) { 1 }
        }
        await #expect(throws: CancellationError.self) { try await caller.value }
    }
}
