import Foundation
public import Logging
import NIOCore
import NIOSSL
public import NostrProtocol
public import ServiceLifecycle
import WSClient

/// One WebSocket connection to one relay, kept up for as long as the service runs.
///
/// - Reconnects after any failure (unresolvable host, refused connection, garbage, a close
///   mid-frame) with exponential backoff and jitter; errors never leave `run()`, because a thrown
///   error inside one `Service` would stop the whole service group.
/// - Subscriptions outlive connections: every (re)connect sends their REQs again.
/// - NIP-42: a challenge is answered with `configuration.authKeys`; after the relay accepts it,
///   REQs are re-sent (a relay that closed them with `auth-required:` serves them now).
/// - `publish` waits for the relay's `OK` with a timeout; messages wait in a bounded queue while
///   the connection is down.
public actor RelayConnection: Service {
    public nonisolated let url: String
    let configuration: RelayConfiguration
    let logger: Logger

    public private(set) var state: RelayState = .idle
    public private(set) var statistics = RelayStatistics()

    private struct Subscription {
        /// Called each time the REQ is sent, so a re-sent REQ can move a relative `since`.
        var filters: @Sendable (RequestContext) -> [Filter]
        let continuation: AsyncStream<SubscriptionEvent>.Continuation
        /// The relay sent EOSE for the latest REQ: everything stored up to then has arrived.
        var caughtUp = false
        /// When a connection on which it was caught up was lost; cleared by the next EOSE. A
        /// connection that drops again before that EOSE leaves it where it was, so a flapping link
        /// never narrows the window past what was actually received.
        var resumeAfter: Int64?
        /// The context of the latest REQ (re-used when AUTH makes a relay serve it again).
        var context = RequestContext()
    }

    private var subscriptions: [String: Subscription] = [:]
    /// The live connection's writer queue (nil while disconnected).
    private var outbound: AsyncStream<String>.Continuation?
    /// Messages queued while disconnected, sent on connect.
    private var backlog: [String] = []
    private var pendingOKs: [EventID: [UUID: CheckedContinuation<PublishResult, any Error>]] = [:]
    private var authEventID: EventID?
    private var consecutiveFailures = 0
    private var stateWatchers: [UUID: AsyncStream<RelayState>.Continuation] = [:]
    private var stopped = false

    public init(url: String, configuration: RelayConfiguration = RelayConfiguration(), logger: Logger) {
        self.url = url
        self.configuration = configuration
        var logger = logger
        logger[metadataKey: "relay.url"] = "\(url)"
        self.logger = logger
    }

    // MARK: Service

    public func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            setState(.connecting)
            do {
                try await cancelWhenGracefulShutdown { try await self.connectOnce() }
                if Task.isCancelled || Task.isShuttingDownGracefully { break }
                throw RelayError.closedByRelay
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { break }
                disconnected(error)
            }
            let delay = configuration.backoff.delay(afterFailures: consecutiveFailures)
            logger.debug("reconnecting", metadata: ["relay.delay_ms": "\(delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000)"])
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: delay) }
        }
        logger.debug("relay connection stopping")
        stop()
    }

    private func connectOnce() async throws {
        let (stream, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingOldest(configuration.outboundLimit))
        // A short close timeout: a relay that does not answer our close frame must not hold up a
        // reconnect or a shutdown.
        let wsConfiguration = WebSocketClientConfiguration(
            maxFrameSize: configuration.maxMessageBytes, closeTimeout: .seconds(1), autoPing: .enabled(timePeriod: configuration.pingInterval))
        let tls: TLSConfiguration? = url.lowercased().hasPrefix("wss://") ? TLSConfiguration.makeClientConfiguration() : nil
        let maxMessageBytes = configuration.maxMessageBytes
        defer { continuation.finish() }
        try await WebSocketClient.connect(url: url, configuration: wsConfiguration, tlsConfiguration: tls, logger: logger) { inbound, writer, _ in
            await self.connected(writer: continuation)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await text in stream { try await writer.writeTextMessage(text) }
                }
                group.addTask {
                    for try await message in inbound.messages(maxSize: maxMessageBytes) {
                        guard case .text(let text) = message else { continue }
                        await self.receive(text)
                    }
                }
                // Either side ending ends the connection.
                _ = try await group.next()
                group.cancelAll()
            }
        }
    }

    // MARK: Subscriptions and publishing

    /// Subscribes (or replaces the filters of) `id`. The stream ends when `unsubscribe(id)` is
    /// called or the service stops.
    public func subscribe(id: String, filters: [Filter]) -> AsyncStream<SubscriptionEvent> {
        subscribe(id: id) { (_: RequestContext) in filters }
    }

    /// Subscribes with filters computed each time the REQ is sent, ignoring why it is sent.
    public func subscribe(id: String, filters: @escaping @Sendable () -> [Filter]) -> AsyncStream<SubscriptionEvent> {
        subscribe(id: id) { (_: RequestContext) in filters() }
    }

    /// Subscribes with filters computed each time the REQ is sent (first send and every
    /// reconnect), for a window relative to the current time such as `since: now − 2 days`. The
    /// context says when a re-sent REQ follows a lost connection (see `RequestContext`).
    public func subscribe(id: String, filters: @escaping @Sendable (RequestContext) -> [Filter]) -> AsyncStream<SubscriptionEvent> {
        let (stream, continuation) = AsyncStream<SubscriptionEvent>.makeStream()
        subscriptions[id]?.continuation.finish()
        subscriptions[id] = Subscription(filters: filters, continuation: continuation)
        if stopped { continuation.finish() }
        enqueue(ClientMessage.req(subscriptionID: id, filters: filters(RequestContext())).json)
        return stream
    }

    public func unsubscribe(id: String) {
        guard let subscription = subscriptions.removeValue(forKey: id) else { return }
        subscription.continuation.finish()
        if outbound != nil { enqueue(ClientMessage.close(subscriptionID: id).json) }
    }

    /// Sends `event` and waits for the relay's `OK` (at most `configuration.publishTimeout`).
    ///
    /// The waiter is registered before the message is queued: on loopback the `OK` can arrive
    /// before a separately scheduled waiter would have been installed.
    public func publish(_ event: NostrEvent) async throws -> PublishResult {
        guard !stopped else { throw RelayError.stopped }
        let token = UUID()
        let timeout = configuration.publishTimeout
        let timer = Task { [weak self] in
            try await Task.sleep(for: timeout)
            await self?.finishWaiter(event.id, token, .failure(RelayError.timeout))
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                pendingOKs[event.id, default: [:]][token] = continuation
                if !enqueue(ClientMessage.event(event).json) { finishWaiter(event.id, token, .failure(RelayError.queueFull)) }
            }
        } onCancel: {
            Task { await self.finishWaiter(event.id, token, .failure(CancellationError())) }
        }
    }

    /// States from now on, starting with the current one.
    public func states() -> AsyncStream<RelayState> {
        let (stream, continuation) = AsyncStream<RelayState>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let id = UUID()
        continuation.yield(state)
        stateWatchers[id] = continuation
        continuation.onTermination = { _ in Task { await self.removeWatcher(id) } }
        return stream
    }

    // MARK: Internals

    private func finishWaiter(_ id: EventID, _ token: UUID, _ result: Result<PublishResult, any Error>) {
        guard let waiter = pendingOKs[id]?.removeValue(forKey: token) else { return }
        if pendingOKs[id]?.isEmpty == true { pendingOKs[id] = nil }
        waiter.resume(with: result)
    }

    private func removeWatcher(_ id: UUID) { stateWatchers[id] = nil }

    /// Queues a message for the relay; false when the queue is full.
    @discardableResult
    private func enqueue(_ text: String) -> Bool {
        if let outbound {
            if case .dropped = outbound.yield(text) {
                statistics.droppedOutbound += 1
                return false
            }
            return true
        }
        guard backlog.count < configuration.outboundLimit else {
            statistics.droppedOutbound += 1
            return false
        }
        backlog.append(text)
        return true
    }

    private func connected(writer: AsyncStream<String>.Continuation) {
        outbound = writer
        consecutiveFailures = 0
        statistics.connections += 1
        setState(.connected)
        logger.info("relay connected")
        // REQs first (they are what a reconnect must restore), then what waited while we were away;
        // REQs already in the backlog are dropped, since the loop re-sends each live one.
        let waiting = backlog.filter { !$0.hasPrefix("[\"REQ\"") && !$0.hasPrefix("[\"CLOSE\"") }
        backlog.removeAll()
        for id in subscriptions.keys {
            guard var subscription = subscriptions[id] else { continue }
            subscription.context = RequestContext(resumingAfter: subscription.resumeAfter)
            subscription.caughtUp = false
            subscriptions[id] = subscription
            enqueue(ClientMessage.req(subscriptionID: id, filters: subscription.filters(subscription.context)).json)
        }
        for text in waiting { enqueue(text) }
    }

    private func disconnected(_ error: any Error) {
        // Only the loss of a live connection counts; failed attempts to reconnect do not.
        if outbound != nil {
            let now = UnixTime.now()
            for id in subscriptions.keys where subscriptions[id]?.caughtUp == true {
                subscriptions[id]?.resumeAfter = now
                subscriptions[id]?.caughtUp = false
            }
        }
        outbound = nil
        authEventID = nil
        consecutiveFailures += 1
        statistics.failures += 1
        let reason = (error as? RelayError)?.description ?? String(describing: type(of: error))
        setState(.failed(reason))
        logger.notice("relay disconnected", metadata: ["relay.error": "\(reason)", "relay.failures": "\(consecutiveFailures)"])
        // Nobody will answer these on this connection.
        for (_, waiters) in pendingOKs { for (_, waiter) in waiters { waiter.resume(throwing: RelayError.disconnected) } }
        pendingOKs.removeAll()
    }

    private func stop() {
        stopped = true
        outbound = nil
        setState(.stopped)
        for (_, subscription) in subscriptions { subscription.continuation.finish() }
        subscriptions.removeAll()
        for (_, waiters) in pendingOKs { for (_, waiter) in waiters { waiter.resume(throwing: RelayError.stopped) } }
        pendingOKs.removeAll()
        for (_, watcher) in stateWatchers { watcher.finish() }
        stateWatchers.removeAll()
    }

    private func setState(_ new: RelayState) {
        guard new != state else { return }
        state = new
        for (_, watcher) in stateWatchers { watcher.yield(new) }
    }

    func receive(_ text: String) {
        let message: RelayMessage
        do {
            message = try RelayMessage(json: text)
        } catch {
            statistics.invalidMessages += 1
            logger.debug("unreadable relay message", metadata: ["error": "\(error)"])
            return
        }
        switch message {
        case .event(let id, let event):
            statistics.events += 1
            subscriptions[id]?.continuation.yield(.event(event))
        case .eose(let id):
            subscriptions[id]?.caughtUp = true
            subscriptions[id]?.resumeAfter = nil
            subscriptions[id]?.continuation.yield(.endOfStoredEvents)
        case .closed(let id, let text):
            statistics.closed += 1
            if RelayMessage.prefix(of: text) == .authRequired, configuration.authKeys == nil { setState(.authRequired) }
            // An auth-required CLOSED is answered by re-sending the REQ once AUTH succeeds.
            if RelayMessage.prefix(of: text) != .authRequired || configuration.authKeys == nil {
                subscriptions[id]?.continuation.yield(.closed(text))
            }
        case .notice(let text):
            statistics.notices += 1
            logger.info("relay notice", metadata: ["relay.notice": "\(text.prefix(200))"])
        case .ok(let id, let accepted, let text):
            if id == authEventID {
                authEventID = nil
                if accepted {
                    for (subscriptionID, subscription) in subscriptions {
                        enqueue(ClientMessage.req(subscriptionID: subscriptionID, filters: subscription.filters(subscription.context)).json)
                    }
                } else {
                    setState(.authRequired)
                }
            }
            let result = PublishResult(eventID: id, accepted: accepted, message: text)
            if let waiters = pendingOKs.removeValue(forKey: id) {
                for (_, waiter) in waiters { waiter.resume(returning: result) }
            }
        case .auth(let challenge):
            guard let keys = configuration.authKeys else {
                setState(.authRequired)
                return
            }
            let event = RelayAuthEvent.make(keys: keys, relayURL: url, challenge: challenge)
            authEventID = event.id
            enqueue(ClientMessage.auth(event).json)
        }
    }
}
