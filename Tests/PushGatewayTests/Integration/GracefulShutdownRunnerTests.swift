import Logging
import NostrProtocol
import PushGateway
import ServiceLifecycle
import TestSupport
import Testing
import UnixSignals

/// The shutdown runner in-process, with signals fed by the test: a graceful stop, the cut after the
/// timeout, a second signal, and services that end or fail on their own. (GatewayProcessTests runs
/// the same against a real `linkstr-push` process and a send APNs never answers.)
@Suite struct GracefulShutdownRunnerTests {
    /// Ends when asked to shut down gracefully.
    struct Cooperative: Service {
        func run() async throws { try? await gracefulShutdown() }
    }

    /// Ignores graceful shutdown; only cancellation ends it.
    struct Stubborn: Service {
        func run() async throws {
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3_600)) }
        }
    }

    struct Failing: Service {
        struct Broken: Error {}
        func run() async throws { throw Broken() }
    }

    struct Returning: Service {
        func run() async throws {}
    }

    static func logger(_ capture: CapturedLog) -> Logger {
        var logger = Logger(label: "shutdown") { _ in capture.handler() }
        logger.logLevel = .info
        return logger
    }

    /// Runs `services` with a signal stream; `afterStart` gets the stream's continuation once the
    /// services have had a moment to start. Returns how long `run` took and what it logged.
    static func run(
        _ services: [any Service], timeout: Duration, afterStart: @Sendable (AsyncStream<UnixSignal>.Continuation) async throws -> Void
    )
        async throws -> (took: Duration, log: [String])
    {
        let capture = CapturedLog()
        let (signals, signal) = AsyncStream.makeStream(of: UnixSignal.self)
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await GracefulShutdownRunner.run(
                    services, signals: signals, timeout: timeout, cancellationTimeout: .seconds(30), logger: logger(capture))
            }
            try await Task.sleep(for: .milliseconds(100))
            try await afterStart(signal)
            try await group.next()
        }
        return (ContinuousClock.now - started, capture.lines.withLock { $0 })
    }

    @Test func aSignalStopsCooperativeServicesGracefully() async throws {
        let (took, log) = try await Self.run([Cooperative(), Cooperative()], timeout: .seconds(60)) { $0.yield(.sigterm) }
        #expect(took < .seconds(10), "no wait for the timeout (\(took))")
        #expect(log.contains { $0.contains("shutting down gracefully") })
        #expect(!log.contains { $0.contains("did not finish in time") })
        #expect(log.contains { $0.hasPrefix("info stopped") })
    }

    @Test func aServiceIgnoringTheShutdownIsCancelledAfterTheTimeout() async throws {
        let (took, log) = try await Self.run([Cooperative(), Stubborn()], timeout: .milliseconds(300)) { $0.yield(.sigterm) }
        #expect(took >= .milliseconds(300) && took < .seconds(10), "\(took)")
        #expect(log.contains { $0.hasPrefix("warning graceful shutdown did not finish in time") }, "\(log)")
        #expect(log.contains { $0.hasPrefix("info stopped after cancelling") }, "\(log)")
    }

    @Test func aSecondSignalCancelsWithoutWaitingForTheTimeout() async throws {
        let (took, log) = try await Self.run([Stubborn()], timeout: .seconds(600)) { signal in
            signal.yield(.sigterm)
            try await Task.sleep(for: .milliseconds(200))
            signal.yield(.sigint)
        }
        #expect(took < .seconds(10), "\(took)")
        #expect(log.contains { $0.hasPrefix("warning second signal") }, "\(log)")
    }

    @Test func theEndOfTheSignalsDoesNotStopTheServices() async throws {
        // The stream ends at once; the group keeps running until its service fails on its own.
        let started = ContinuousClock.now
        await #expect(throws: (any Error).self) {
            try await GracefulShutdownRunner.run(
                [Stubborn(), DelayedFailure()], signals: AsyncStream<UnixSignal> { $0.finish() },
                timeout: .seconds(60), logger: Self.logger(CapturedLog()))
        }
        #expect(ContinuousClock.now - started >= .milliseconds(400), "the services ran until the failure")
    }

    struct DelayedFailure: Service {
        func run() async throws {
            try await Task.sleep(for: .milliseconds(400))
            throw Failing.Broken()
        }
    }

    @Test func aServiceFailingOnItsOwnEndsTheRunWithItsError() async throws {
        await #expect(throws: Failing.Broken.self) {
            _ = try await Self.run([Stubborn(), Failing()], timeout: .seconds(60)) { _ in }
        }
    }

    @Test func aServiceEndingOnItsOwnEndsTheRunWithAnError() async throws {
        await #expect(throws: ServiceGroupError.self) {
            _ = try await Self.run([Stubborn(), Returning()], timeout: .seconds(60)) { _ in }
        }
    }
}
