import NostrProtocol

/// `withDeadline` gave up: the work did not finish in time and was cancelled.
package struct DeadlineExceeded: Error {}

/// Runs `body`, answering with `DeadlineExceeded` once `limit` has passed, whether or not `body`
/// has stopped by then. An unreachable database leaves the pool waiting for a connection that
/// cannot be made; a silent one (a partition, no reset) leaves a statement already sent on a
/// pooled connection unanswered, and PostgresNIO does not abandon a statement in flight when its
/// task is cancelled. Requests and probes must get their answer in bounded time all the same.
///
/// That is why `body` runs in its own task rather than in a task group: a group returns only once
/// every child has, so a body deaf to cancellation held the answer until the database spoke again
/// (`/readyz` hung past its 1.5 s limit in CI). `body` is cancelled at the deadline and left to
/// finish on its own; its result is then dropped.
package func withDeadline<Result: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> Result) async throws -> Result
{
    let race = DeadlineRace<Result>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Result, any Error>) in
            let work = Task {
                do { race.finish(.success(try await body())) } catch { race.finish(.failure(error)) }
            }
            let timer = Task {
                try await Task.sleep(for: limit)
                race.finish(.failure(DeadlineExceeded()))
            }
            race.start(continuation) {
                work.cancel()
                timer.cancel()
            }
        }
    } onCancel: {
        race.finish(.failure(CancellationError()))
    }
}

/// The first of the body's outcome, the timer and the caller's cancellation resumes the caller;
/// the others find it answered and do nothing. Whichever comes first also cancels both tasks.
private final class DeadlineRace<Result: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result, any Error>?
        /// An outcome that came before the continuation was installed (cancellation can).
        var early: Swift.Result<Result, any Error>?
        var cancelTasks: (@Sendable () -> Void)?
        var answered = false
    }

    private let state = Locked(State())

    func start(_ continuation: CheckedContinuation<Result, any Error>, cancelTasks: @escaping @Sendable () -> Void) {
        let early: Swift.Result<Result, any Error>? = state.withLock { state in
            guard let early = state.early else {
                state.continuation = continuation
                state.cancelTasks = cancelTasks
                return nil
            }
            return early
        }
        guard let early else { return }
        cancelTasks()
        continuation.resume(with: early)
    }

    func finish(_ outcome: Swift.Result<Result, any Error>) {
        let (continuation, cancelTasks) = state.withLock { state -> (CheckedContinuation<Result, any Error>?, (@Sendable () -> Void)?) in
            guard !state.answered else { return (nil, nil) }
            state.answered = true
            guard let continuation = state.continuation else {
                state.early = outcome
                return (nil, nil)
            }
            defer {
                state.continuation = nil
                state.cancelTasks = nil
            }
            return (continuation, state.cancelTasks)
        }
        cancelTasks?()
        continuation?.resume(with: outcome)
    }
}
