import Foundation
public import Logging
public import NostrProtocol
public import ServiceLifecycle

/// One WebSocket connection to one relay, kept up for as long as the service runs.
///
/// - Reconnects after any failure (unresolvable host, refused connection, garbage, a close
///   mid-frame) with exponential backoff and jitter; errors never leave `run()`, because a thrown
///   error inside one `Service` would stop the whole service group.
/// - Subscriptions outlive connections: every (re)connect sends their REQs again.
/// - Bounded inbound path: messages are parsed on the reading task and handed to the
///   subscriptions' consumers through queues that share one byte budget
///   (`configuration.inboundBufferBytes`). While it is full the reading task waits, SwiftNIO stops
///   reading the socket, and TCP makes the relay wait. A connection lost during or just after such
///   a pause re-subscribes from when the pause began, not from when the loss was noticed.
/// - Limits (`configuration.limits`): a relay that sends more than its rate, or too many invalid
///   events, is disconnected and reconnected after a longer backoff.
/// - NIP-42: a challenge is answered with `configuration.authKeys`; after the relay accepts it,
///   REQs are re-sent (a relay that closed them with `auth-required:` serves them now).
/// - `publish` waits for the relay's `OK` with a timeout; messages wait in a bounded queue while
///   the connection is down.
/// - Relay-controlled text reaches the log only escaped and throttled (`RelayTextLog`).
public actor RelayConnection: Service {
    public nonisolated let url: String
    let configuration: RelayConfiguration
    let logger: Logger

    public private(set) var state: RelayState = .idle
    private var counters = RelayStatistics()

    private struct Subscription {
        /// Called each time the REQ is sent, so a re-sent REQ can move a relative `since`.
        var filters: @Sendable (SubscriptionRequestContext) -> [Filter]
        let buffer: SubscriptionBuffer<SubscriptionEvent>
        /// The relay sent EOSE for the latest REQ: everything stored up to then has arrived.
        var caughtUp = false
        /// From when events may have been missed (Unix seconds): when a connection on which it was
        /// caught up was lost, or when reading paused before that; cleared by the next EOSE. A
        /// connection that drops again before that EOSE leaves it where it was, so a flapping link
        /// never narrows the window past what was actually received.
        var resumeAfter: Int64?
        /// A long read pause came while the latest REQ was still replaying (Unix seconds, as in
        /// `resumeAfter`): that replay holds only what was stored when the relay took the REQ, so
        /// once its EOSE comes the REQ is sent again from here.
        var askAgainFrom: Int64?
        /// The context of the latest REQ (re-used when AUTH makes a relay serve it again).
        var context = SubscriptionRequestContext()
    }

    /// Where the reading task takes a message: an EVENT to its subscription's queue, or nowhere
    /// (no such subscription); anything else to the actor (`handle`).
    private enum Route {
        case queue(SubscriptionBuffer<SubscriptionEvent>, NostrEvent)
        case drop
        case actor
    }

    /// A parsed message on its way from the reading task to a subscription's queue.
    package struct Delivery: Sendable {
        package let buffer: SubscriptionBuffer<SubscriptionEvent>
        package let event: SubscriptionEvent
        /// The message's bytes, reserved in `budget` while it is queued.
        package let cost: Int
    }

    /// What the reading task counts on every message and consumers report, behind a lock rather
    /// than the actor: one actor hop per message for bookkeeping would cost more than the rest.
    private struct Reading {
        var traffic: RelayTraffic
        var invalidEvents = 0
        /// EVENT messages read.
        var events = 0
        /// Each subscription's queue, as `subscriptions` has it (kept beside it by
        /// `setSubscription`): the reading task routes an EVENT here under the lock it counts the
        /// message with, instead of hopping onto the actor and back for every event.
        var buffers: [String: SubscriptionBuffer<SubscriptionEvent>] = [:]
        /// When reading paused (Unix seconds), while it is paused.
        var pausedSince: Int64?
        /// Pauses less than `recentPause` apart, as one stretch (Unix seconds): a consumer working
        /// through a backlog lets the reader on and stops it again many times, and what went
        /// missing started going missing at the first of them.
        var episode: (start: Int64, end: Int64)?
        var pauses = 0
        var pausedTime: Duration = .zero
        /// The current connection's task waiting to hang up on a breach a consumer reports.
        var breachWaiter: CheckedContinuation<RelayTraffic.Breach?, Never>?

        /// When events may have started going missing, as seen at `now` (a connection lost): the
        /// start of a pause still going on or over for less than `recentPause`, less `pauseMargin`.
        func missedSince(now: Int64) -> Int64? {
            guard let episode, pausedSince != nil || now - episode.end <= RelayConnection.recentPause else { return nil }
            return episode.start - RelayConnection.pauseMargin
        }

        mutating func pauseStarted(at now: Int64) {
            pausedSince = now
            if let episode, now - episode.end <= RelayConnection.recentPause { return }
            episode = (now, now)
        }

        mutating func pauseEnded(at now: Int64, after waited: Duration) {
            pausedSince = nil
            episode?.end = now
            pauses += 1
            pausedTime += waited
        }
    }

    /// Seconds before a pause's start that a re-sent REQ also covers: what the relay had queued,
    /// or was in the socket buffers, when reading stopped was sent before the pause began, and is
    /// lost with the connection.
    package static let pauseMargin: Int64 = 60
    /// A connection lost this many seconds after a pause ended is taken to be lost because of it
    /// (a relay that gives up on a slow client may take a while to do so); pauses this close
    /// together are one stretch.
    static let recentPause: Int64 = 60

    /// Added, replaced and removed only through `setSubscription` (which keeps the reading
    /// task's `Reading.buffers` beside it); other fields may change in place.
    private var subscriptions: [String: Subscription] = [:]
    private nonisolated let budget: InboundBudget
    private nonisolated let reading: Locked<Reading>
    private var textLog: RelayTextLog
    /// The live connection's writer queue (nil while disconnected).
    private var outbound: AsyncStream<String>.Continuation?
    /// Messages queued while disconnected, sent on connect.
    private var backlog: [String] = []
    private var pendingOKs: [EventID: [UUID: CheckedContinuation<PublishResult, any Error>]] = [:]
    private var authEventID: EventID?
    private var consecutiveFailures = 0
    /// Connections in a row closed for a broken limit (the longer backoff grows with it).
    private var consecutiveBreaches = 0
    private var stateWatchers: [UUID: AsyncStream<RelayState>.Continuation] = [:]
    private var stopped = false

    public init(url: String, configuration: RelayConfiguration = RelayConfiguration(), logger: Logger) {
        self.url = url
        self.configuration = configuration
        var logger = logger
        logger[metadataKey: "relay.url"] = "\(url)"
        self.logger = logger
        budget = InboundBudget(limit: configuration.inboundBufferBytes)
        reading = Locked(Reading(traffic: RelayTraffic(limits: configuration.limits)))
        textLog = RelayTextLog(interval: configuration.relayTextLogInterval)
    }

    /// Counters, rates and the reading state.
    public var statistics: RelayStatistics {
        var statistics = counters
        statistics.suppressedLogLines = textLog.suppressedTotal
        let now = ContinuousClock.now
        reading.withLock { reading in
            statistics.events = reading.events
            statistics.invalidEvents = reading.invalidEvents
            statistics.eventsPerSecond = reading.traffic.eventsPerSecond(at: now)
            statistics.invalidPerSecond = reading.traffic.invalidPerSecond(at: now)
            statistics.readingPaused = reading.pausedSince != nil
            statistics.readPauses = reading.pauses
            statistics.readPausedTime = reading.pausedTime
        }
        return statistics
    }

    // MARK: Service

    public func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            setState(.connecting)
            var breach: RelayTraffic.Breach?
            do {
                try await cancelWhenGracefulShutdown { try await self.connectOnce() }
                if Task.isCancelled || Task.isShuttingDownGracefully { break }
                throw RelayError.closedByRelay
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { break }
                if case RelayError.limitExceeded(let broken) = error { breach = broken }
                if case RelayError.refusedAddress(let reason) = error {
                    refused(reason)
                } else {
                    disconnected(error)
                }
            }
            let delay =
                if case .refused = state {
                    configuration.limits.backoff.delay(afterFailures: consecutiveFailures)
                } else if breach == nil {
                    configuration.backoff.delay(afterFailures: consecutiveFailures)
                } else {
                    configuration.limits.backoff.delay(afterFailures: consecutiveBreaches)
                }
            logger.debug("reconnecting", metadata: ["relay.delay_ms": "\(Self.milliseconds(delay))"])
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: delay) }
        }
        logger.debug("relay connection stopping")
        stop()
    }

    private func connectOnce() async throws {
        let target: RelayURL
        do { target = try RelayURL(url) } catch { throw RelayError.refusedAddress("is not a relay URL (\(error))") }
        var addresses: [IPAddress]?
        if let policy = configuration.addressPolicy {
            addresses = try await Self.judgedAddresses(of: target, policy, resolver: configuration.resolver)
        }
        let (stream, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingOldest(configuration.outboundLimit))
        defer { continuation.finish() }
        let options = RelaySocket.Options(
            maxMessageBytes: configuration.maxMessageBytes, pingInterval: configuration.pingInterval,
            // A relay that does not answer our close frame must not hold up a reconnect or a
            // shutdown.
            closeTimeout: .seconds(1), handshakeTimeout: configuration.handshakeTimeout,
            tlsContext: target.isSecure ? try RelaySocket.tlsContext(trusting: configuration.additionalTrustRoots) : nil)
        try await RelaySocket.run(url: target, addresses: addresses, options: options) { messages, writer in
            await self.connected(writer: continuation)
            try await Self.exchange(messages: messages, writer: writer, outbound: stream, with: self)
        }
    }

    /// Where a connection to `url` may go under `policy`, judged now: throws `refusedAddress` when
    /// the policy refuses it. A host name is looked up once, and the connection goes to exactly the
    /// addresses judged here (nil for an IP literal), so a name server cannot answer the check with
    /// a public address and the connection with a private one (DNS rebinding). With private
    /// addresses allowed nothing is refused, but the connection still goes where this lookup led.
    private static func judgedAddresses(
        of url: RelayURL, _ policy: RelayAddressPolicy, resolver: RelayConfiguration.Resolver
    ) async throws -> [IPAddress]? {
        if let refusal = policy.refusal(for: url) { throw RelayError.refusedAddress(refusal) }
        guard case .name(let name) = url.host else { return nil }
        let addresses = try await resolver(name)
        // A name with no address is unreachable, not refused: it may be a typo, or not yet set up.
        guard !addresses.isEmpty else { throw RelayError.noAddress }
        if let refusal = policy.refusal(resolved: addresses) { throw RelayError.refusedAddress(refusal) }
        return addresses
    }

    /// Writes what is queued for the relay, reads what it sends, and watches for a limit broken by
    /// what a consumer reported, until one of them ends or throws.
    private static func exchange(
        messages: RelaySocketMessages, writer: RelaySocketWriter, outbound: AsyncStream<String>, with connection: RelayConnection
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await text in outbound { try await writer.writeText(text) }
            }
            group.addTask {
                // One message at a time: the next is asked for only once this one is queued
                // for its consumer, which is what stops the socket when consumers fall behind.
                while let message = try await messages.next() {
                    try await connection.read(message)
                }
            }
            group.addTask {
                // A limit broken by what a consumer reported, while the relay is quiet.
                if let breach = await connection.nextBreach() { throw RelayError.limitExceeded(breach) }
            }
            // Any of them ending ends the connection.
            _ = try await group.next()
            group.cancelAll()
        }
    }

    // MARK: Subscriptions and publishing

    /// Subscribes (or replaces the filters of) `id`. The stream ends when `unsubscribe(id)` is
    /// called or the service stops.
    public func subscribe(id: String, filters: [Filter]) -> SubscriptionStream {
        subscribe(id: id) { (_: SubscriptionRequestContext) in filters }
    }

    /// Subscribes with filters computed each time the REQ is sent, ignoring why it is sent.
    public func subscribe(id: String, filters: @escaping @Sendable () -> [Filter]) -> SubscriptionStream {
        subscribe(id: id) { (_: SubscriptionRequestContext) in filters() }
    }

    /// Subscribes with filters computed each time the REQ is sent (first send and every
    /// reconnect), for a window relative to the current time such as `since: now − 2 days`. The
    /// context says when a re-sent REQ follows a lost connection or a long read pause (see
    /// `SubscriptionRequestContext`).
    public func subscribe(id: String, filters: @escaping @Sendable (SubscriptionRequestContext) -> [Filter]) -> SubscriptionStream {
        let buffer = SubscriptionBuffer<SubscriptionEvent>(budget: budget)
        subscriptions[id]?.buffer.finish()
        setSubscription(id, Subscription(filters: filters, buffer: buffer))
        if stopped { buffer.finish() }
        enqueue(ClientMessage.req(subscriptionID: id, filters: filters(SubscriptionRequestContext())).json)
        return SubscriptionStream(buffer: buffer)
    }

    /// Adds, replaces or (nil) removes subscription `id`, and its queue where the reading task
    /// routes EVENTs (`Reading.buffers`): the one place either changes.
    private func setSubscription(_ id: String, _ subscription: Subscription?) {
        subscriptions[id] = subscription
        reading.withLock { $0.buffers[id] = subscription?.buffer }
    }

    public func unsubscribe(id: String) {
        guard let subscription = subscriptions[id] else { return }
        setSubscription(id, nil)
        subscription.buffer.finish()
        if outbound != nil { enqueue(ClientMessage.close(subscriptionID: id).json) }
    }

    /// Counts `count` events a consumer found invalid (junk, a bad id, a bad signature) toward
    /// `configuration.limits.maxInvalid`; past it, the connection is closed.
    public nonisolated func countInvalid(_ count: Int = 1) {
        let breached = reading.withLock { reading -> (CheckedContinuation<RelayTraffic.Breach?, Never>, RelayTraffic.Breach)? in
            reading.invalidEvents += count
            guard let breach = reading.traffic.record(invalid: count, at: .now), let waiter = reading.breachWaiter else { return nil }
            reading.breachWaiter = nil
            return (waiter, breach)
        }
        if let (waiter, breach) = breached { waiter.resume(returning: breach) }
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

    // MARK: Reading

    /// One inbound message, on the reading task: counted against the limits, parsed, and queued
    /// for its subscription's consumer, waiting for room in the budget.
    private nonisolated func read(_ message: RelaySocket.Message) async throws {
        let inbound: Result<RelayMessage, RelayMessageError>?
        let cost: Int
        switch message {
        case .text(let text):
            inbound = Result { () throws(RelayMessageError) in try RelayMessage(json: text) }
            cost = text.utf8.count
        case .binary(let bytes):
            inbound = nil
            cost = bytes
        }
        let (breach, route) = route(inbound)
        if let breach { throw RelayError.limitExceeded(breach) }
        switch route {
        case .queue(let buffer, let event):
            await deliver(Delivery(buffer: buffer, event: .event(event), cost: cost))
        case .drop:
            return
        case .actor:
            guard let delivery = await handle(inbound, cost: cost) else { return }
            await deliver(delivery)
        }
    }

    /// Counts a message against the limits and says where it goes; under one lock, so that an
    /// EVENT reaches its subscription's queue without a hop onto the actor and back. A message
    /// past a broken limit goes nowhere (and is not counted as an event).
    private nonisolated func route(_ inbound: Result<RelayMessage, RelayMessageError>?) -> (RelayTraffic.Breach?, Route) {
        let unreadable: Bool
        if case .success = inbound { unreadable = false } else { unreadable = true }
        return reading.withLock { reading in
            if let breach = reading.traffic.record(events: 1, invalid: unreadable ? 1 : 0, at: .now) { return (breach, .drop) }
            guard case .success(.event(let id, let event)) = inbound else { return (nil, .actor) }
            reading.events += 1
            return (nil, reading.buffers[id].map { .queue($0, event) } ?? .drop)
        }
    }

    /// Queues `delivery`, first waiting for room in the budget if there is none. A wait is a read
    /// pause: it is timed, and a long one re-sends the subscriptions from when it began.
    private nonisolated func deliver(_ delivery: Delivery) async {
        if !budget.tryReserve(delivery.cost) {
            let started = ContinuousClock.now
            let startedAt = UnixTime.now()
            reading.withLock { $0.pauseStarted(at: startedAt) }
            let reserved = await budget.reserve(delivery.cost)
            let waited = ContinuousClock.now - started
            reading.withLock { $0.pauseEnded(at: UnixTime.now(), after: waited) }
            // Cancelled: the connection is ending, and `disconnected` reaches back over the pause.
            guard reserved else { return }
            if let threshold = configuration.resubscribeAfterPause, waited >= threshold {
                await resubscribeAfterPause(from: startedAt - Self.pauseMargin, waited: waited)
            }
        }
        if !delivery.buffer.append(delivery.event, cost: delivery.cost) { budget.release(delivery.cost) }
    }

    /// The breach a consumer's report caused on this connection; nil when the task is cancelled
    /// (the connection ended for another reason).
    private nonisolated func nextBreach() async -> RelayTraffic.Breach? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<RelayTraffic.Breach?, Never>) in
                let now: RelayTraffic.Breach?? = reading.withLock { reading in
                    if Task.isCancelled { return .some(nil) }
                    if let breach = reading.traffic.breach { return .some(breach) }
                    reading.breachWaiter = continuation
                    return .none
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = reading.withLock { reading in
                defer { reading.breachWaiter = nil }
                return reading.breachWaiter
            }
            waiter?.resume(returning: nil)
        }
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
                counters.droppedOutbound += 1
                return false
            }
            return true
        }
        guard backlog.count < configuration.outboundLimit else {
            counters.droppedOutbound += 1
            return false
        }
        backlog.append(text)
        return true
    }

    private func connected(writer: AsyncStream<String>.Continuation) {
        outbound = writer
        consecutiveFailures = 0
        counters.connections += 1
        // Limits apply per connection: a relay reconnected after a breach starts clean.
        reading.withLock { $0.traffic.reset() }
        setState(.connected)
        logger.info("relay connected")
        // REQs first (they are what a reconnect must restore), then what waited while we were away;
        // REQs already in the backlog are dropped, since the loop re-sends each live one.
        let waiting = backlog.filter { !$0.hasPrefix("[\"REQ\"") && !$0.hasPrefix("[\"CLOSE\"") }
        backlog.removeAll()
        for id in subscriptions.keys {
            guard var subscription = subscriptions[id] else { continue }
            subscription.context = SubscriptionRequestContext(resumingAfter: subscription.resumeAfter)
            subscription.caughtUp = false
            subscriptions[id] = subscription
            enqueue(ClientMessage.req(subscriptionID: id, filters: subscription.filters(subscription.context)).json)
        }
        for text in waiting { enqueue(text) }
    }

    /// Reading was paused for `waited` (consumers behind): a relay that drops events for a client
    /// that does not read, instead of dropping the client, has lost some of what it sent since the
    /// pause began. Every subscription that had caught up asks again from `from` now; one still
    /// replaying asks again from there once its replay ends, since the replay holds only what was
    /// stored when the relay took the REQ.
    private func resubscribeAfterPause(from: Int64, waited: Duration) {
        guard outbound != nil else { return }
        var (resent, deferred) = (0, 0)
        for id in subscriptions.keys.sorted() {
            guard let subscription = subscriptions[id] else { continue }
            if subscription.caughtUp {
                askAgain(id, from: from)
                resent += 1
            } else {
                subscriptions[id]?.askAgainFrom = min(subscription.askAgainFrom ?? from, from)
                deferred += 1
            }
        }
        guard resent + deferred > 0 else { return }
        logger.notice(
            "reading from the relay paused; subscriptions asked again from before the pause",
            metadata: [
                "relay.paused_ms": "\(Self.milliseconds(waited))", "relay.resubscribed": "\(resent)",
                "relay.after_replay": "\(deferred)",
            ])
    }

    /// Sends subscription `id`'s REQ again, reaching back to `from` (a long read pause).
    private func askAgain(_ id: String, from: Int64) {
        guard var subscription = subscriptions[id] else { return }
        subscription.resumeAfter = from
        subscription.caughtUp = false
        subscription.context = SubscriptionRequestContext(resumingAfter: from)
        subscriptions[id] = subscription
        enqueue(ClientMessage.req(subscriptionID: id, filters: subscription.filters(subscription.context)).json)
        counters.resubscribedAfterPause += 1
    }

    private func disconnected(_ error: any Error) {
        // Only the loss of a live connection counts; failed attempts to reconnect do not.
        if outbound != nil {
            let now = UnixTime.now()
            let missedSince = min(now, reading.withLock { $0.missedSince(now: now) } ?? now)
            for id in subscriptions.keys {
                if subscriptions[id]?.caughtUp == true {
                    subscriptions[id]?.resumeAfter = missedSince
                    subscriptions[id]?.caughtUp = false
                } else if let subscription = subscriptions[id] {
                    // Still replaying: the reconnect's replay reaches back over whatever this one
                    // was to cover, and over a pause it was to ask again for.
                    let earliest = [subscription.resumeAfter, subscription.askAgainFrom].compactMap { $0 }.min()
                    subscriptions[id]?.resumeAfter = earliest.map { min($0, missedSince) }
                    subscriptions[id]?.askAgainFrom = nil
                }
            }
            if case RelayError.limitExceeded = error {} else { consecutiveBreaches = 0 }
        }
        if case RelayError.limitExceeded(let breach) = error {
            consecutiveBreaches += 1
            counters.limitDisconnects[breach, default: 0] += 1
            counters.lastBreach = breach
        }
        outbound = nil
        authEventID = nil
        consecutiveFailures += 1
        counters.failures += 1
        let reason =
            (error as? RelayError)?.description ?? (error as? RelaySocket.Failure)?.description ?? String(describing: type(of: error))
        setState(.failed(reason))
        var metadata: Logger.Metadata = ["relay.error": "\(reason)", "relay.failures": "\(consecutiveFailures)"]
        if case RelayError.limitExceeded(let breach) = error {
            metadata["relay.limit"] = "\(breach.rawValue)"
            metadata["relay.breaches"] = "\(consecutiveBreaches)"
        }
        logger.notice("relay disconnected", metadata: metadata)
        // Nobody will answer these on this connection.
        for (_, waiters) in pendingOKs { for (_, waiter) in waiters { waiter.resume(throwing: RelayError.disconnected) } }
        pendingOKs.removeAll()
    }

    /// The address policy refused the relay: nothing was connected, so nothing was lost.
    private func refused(_ reason: String) {
        consecutiveFailures += 1
        counters.failures += 1
        if state != .refused(reason) { logger.notice("relay refused by the address policy", metadata: ["relay.refusal": "\(reason)"]) }
        setState(.refused(reason))
    }

    private func stop() {
        stopped = true
        outbound = nil
        setState(.stopped)
        for (id, subscription) in subscriptions {
            subscription.buffer.finish()
            setSubscription(id, nil)
        }
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

    /// Parses, counts and routes `text` as if the relay had sent it (tests); what it would queue is
    /// returned, not queued.
    @discardableResult
    package func receive(_ text: String) -> Delivery? {
        let inbound = Result { () throws(RelayMessageError) in try RelayMessage(json: text) }
        switch route(inbound).1 {
        case .queue(let buffer, let event): return Delivery(buffer: buffer, event: .event(event), cost: text.utf8.count)
        case .drop: return nil
        case .actor: return handle(inbound, cost: text.utf8.count)
        }
    }

    /// Applies a message to the connection's state; returns what goes to a subscription's
    /// consumer. `inbound` is nil for a binary frame.
    private func handle(_ inbound: Result<RelayMessage, RelayMessageError>?, cost: Int) -> Delivery? {
        let message: RelayMessage
        switch inbound {
        case .success(let parsed):
            message = parsed
        case .failure(let error):
            counters.invalidMessages += 1
            logRelayText("unreadable relay message", error.description, level: .debug)
            return nil
        case nil:
            counters.invalidMessages += 1
            return nil
        }
        switch message {
        case .event:
            // Routed by `read`, under the reading lock.
            return nil
        case .eose(let id):
            guard let subscription = subscriptions[id] else { return nil }
            subscriptions[id]?.caughtUp = true
            subscriptions[id]?.resumeAfter = nil
            if let from = subscription.askAgainFrom {
                subscriptions[id]?.askAgainFrom = nil
                askAgain(id, from: from)
            }
            return Delivery(buffer: subscription.buffer, event: .endOfStoredEvents, cost: cost)
        case .closed(let id, let text):
            return handleClosed(id, text, cost: cost)
        case .notice(let text):
            counters.notices += 1
            logRelayText("relay notice", text)
            return nil
        case .ok(let id, let accepted, let text):
            handleOK(id, accepted: accepted, text)
            return nil
        case .auth(let challenge):
            answerAuthChallenge(challenge)
            return nil
        }
    }

    private func handleClosed(_ id: String, _ text: String, cost: Int) -> Delivery? {
        counters.closed += 1
        guard let subscription = subscriptions[id] else { return nil }
        logRelayText("relay closed a subscription", text, metadata: ["relay.subscription": "\(id)"])
        if RelayMessage.prefix(of: text) == .authRequired, configuration.authKeys == nil { setState(.authRequired) }
        // An auth-required CLOSED while our AUTH is in flight is answered by re-sending the REQ
        // once it is accepted. One after it was accepted means our key is not the one the relay
        // wants (a DM inbox serves only the recipient); one before any challenge, that the
        // relay has not asked yet: both go to the subscriber, and a later accepted AUTH still
        // re-sends the REQ.
        if RelayMessage.prefix(of: text) == .authRequired, configuration.authKeys != nil, authEventID != nil { return nil }
        return Delivery(buffer: subscription.buffer, event: .closed(text), cost: cost)
    }

    /// Our AUTH event's OK re-issues every REQ (or marks the connection auth-required); any
    /// other OK goes to whoever waits for that event.
    private func handleOK(_ id: EventID, accepted: Bool, _ text: String) {
        let ours = id == authEventID || pendingOKs[id] != nil
        if ours, !accepted { logRelayText("relay refused an event", text, metadata: ["relay.event_id": "\(id.hex)"]) }
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
    }

    private func answerAuthChallenge(_ challenge: String) {
        guard let keys = configuration.authKeys else {
            setState(.authRequired)
            return
        }
        let event = RelayAuthEvent.make(keys: keys, relayURL: url, challenge: challenge)
        authEventID = event.id
        enqueue(ClientMessage.auth(event).json)
    }

    /// Logs relay-controlled `text`, escaped, at most once per `relayTextLogInterval` for this
    /// relay (the lines held back are counted in the next one).
    private func logRelayText(_ message: Logger.Message, _ text: String, level: Logger.Level = .info, metadata: Logger.Metadata = [:]) {
        guard level >= logger.logLevel, let line = textLog.admit(text, at: .now) else { return }
        var metadata = metadata
        metadata["relay.text"] = "\(line.text)"
        if line.suppressed > 0 { metadata["relay.suppressed"] = "\(line.suppressed)" }
        logger.log(level: level, message, metadata: metadata)
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
    }
}
