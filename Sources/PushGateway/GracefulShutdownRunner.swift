public import Logging
public import ServiceLifecycle
package import UnixSignals

/// Runs the gateway's services until SIGTERM or SIGINT, then shuts them down gracefully within a
/// bound: the HTTP server stops taking requests, in-flight sends finish, the connections close.
///
/// ServiceLifecycle's own signal handling waits for a graceful shutdown however long it takes
/// and logs only at debug level. An orchestrator, though, kills a process that overstays its
/// grace period (Kubernetes' default is 30 s), and an operator needs to see why it stopped. So
/// the first signal is logged, a second one or `timeout` escalates to task cancellation (every
/// service then ends at once; queued jobs stay in PostgreSQL and their leases lapse), and the
/// escalation is logged as a warning. A service that then ignores cancellation for more than
/// `cancellationTimeout` (or, without any signal, after another service failed) ends the
/// process through ServiceLifecycle's `fatalError` rather than leaving it unkillable but by SIGKILL.
public enum GracefulShutdownRunner {
    public static func run(_ services: [any Service], timeout: Duration, cancellationTimeout: Duration = .seconds(10), logger: Logger)
        async throws
    {
        try await run(
            services, signals: await UnixSignalsSequence(trapping: .sigterm, .sigint), timeout: timeout,
            cancellationTimeout: cancellationTimeout, logger: logger)
    }

    /// The same with the signals given (tests feed their own).
    package static func run<Signals: AsyncSequence & Sendable>(
        _ services: [any Service], signals: Signals, timeout: Duration, cancellationTimeout: Duration = .seconds(10), logger: Logger
    ) async throws where Signals.Element == UnixSignal {
        var configuration = ServiceGroupConfiguration(services: services, logger: logger)
        configuration.maximumCancellationDuration = cancellationTimeout
        let group = ServiceGroup(configuration: configuration)
        let (shutdownStarted, startShutdown) = AsyncStream.makeStream(of: Void.self)
        try await withThrowingTaskGroup(of: Bool.self) { tasks in
            tasks.addTask {
                try await group.run()
                return false
            }
            tasks.addTask {
                var signalled = false
                for try await signal in signals {
                    if signalled {
                        logger.warning("second signal: cancelling what is still running", metadata: ["signal": "\(signal)"])
                        return true
                    }
                    signalled = true
                    logger.info(
                        "shutting down gracefully",
                        metadata: ["signal": "\(signal)", "shutdown.timeout_s": "\(timeout.components.seconds)"])
                    startShutdown.yield()
                    await group.triggerGracefulShutdown()
                }
                // No more signals can come: the services still decide when this ends.
                while !Task.isCancelled { try? await Task.sleep(for: .seconds(3_600)) }
                return false
            }
            tasks.addTask {
                for await _ in shutdownStarted {
                    try? await Task.sleep(for: timeout)
                    guard !Task.isCancelled else { return false }
                    logger.warning(
                        "graceful shutdown did not finish in time: cancelling what is still running",
                        metadata: ["shutdown.timeout_s": "\(timeout.components.seconds)"])
                    return true
                }
                return false
            }
            // The services ending (or an escalation) ends the signal listener and the timer; an
            // escalation cancels the services.
            let escalated = try await tasks.next() ?? false
            tasks.cancelAll()
            startShutdown.finish()
            do {
                while try await tasks.next() != nil {}
            } catch  where escalated {
                // Services cancelled mid-way may throw (CancellationError is the point of it), but
                // a failure that started the trouble must not vanish without a trace.
                if !(error is CancellationError) {
                    // The type only, as everywhere: error descriptions can carry values.
                    logger.warning("services ended with an error after the cut", metadata: ["error.type": "\(type(of: error))"])
                }
            }
            logger.info(escalated ? "stopped after cancelling" : "stopped")
        }
    }
}
