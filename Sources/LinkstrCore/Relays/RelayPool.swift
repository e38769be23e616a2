public import Logging
public import NostrProtocol
public import NostrRelay

/// The client's relays: one `RelayConnection` per enabled relay, the same subscriptions on each,
/// live status for the relay screen, and publishing where an event counts as sent once any relay
/// accepted it (docs/linkstr-wire.md §1). Stopping tears everything down; starting again builds from
/// scratch (a foreground restart behaves like a cold open).
public actor RelayPool {
    public struct Subscription: Sendable {
        public var id: String
        /// Computed for each REQ; the context says when a re-sent one follows a lost connection.
        public var filters: @Sendable (SubscriptionRequestContext) -> [Filter]

        public init(id: String, filters: @escaping @Sendable (SubscriptionRequestContext) -> [Filter]) {
            self.id = id
            self.filters = filters
        }

        public init(id: String, filters: @escaping @Sendable () -> [Filter]) {
            self.init(id: id) { (_: SubscriptionRequestContext) in filters() }
        }
    }

    public enum SendError: Error, Sendable, Equatable, CustomStringConvertible {
        case noEnabledRelays
        case onlyReadOnlyRelays
        case noRelayConnected
        /// Some events were accepted by no relay; the message says why the last refusal happened.
        case notAccepted(String)

        public var description: String {
            switch self {
            case .noEnabledRelays: "no relay is enabled"
            case .onlyReadOnlyRelays: "every connected relay is read-only"
            case .noRelayConnected: "no relay connected in time"
            case .notAccepted(let reason): "not accepted by any relay: \(reason)"
            }
        }
    }

    public typealias EventHandler = @Sendable (_ relay: String, _ subscriptionID: String, _ event: SubscriptionEvent) async -> Void
    public typealias StatusHandler = @Sendable (_ statuses: [String: RelayStatus]) async -> Void

    private struct Member {
        let connection: RelayConnection
        var tasks: [Task<Void, Never>]
        /// Read only: one of the account's inbox relays that is not among its relays. Its
        /// subscriptions run as on the others; nothing is published there but what is addressed
        /// to it, and it does not count for the send gating.
        var reader = false
    }

    private let logger: Logger
    private let configuration: RelayConfiguration
    private var members: [String: Member] = [:]
    private var entries: [RelayEntry] = []
    public private(set) var statuses: [String: RelayStatus] = [:]
    private var onEvent: EventHandler?
    private var onStatus: StatusHandler?
    private var statusWaiters: [CheckedContinuation<Void, Never>] = []
    /// Counts starts and stops, so a start that was suspended across another can tell.
    private var runs = 0
    /// This run's subscriptions (readers added later get them too) and connection settings.
    private var subscriptions: [Subscription] = []
    private var runConfiguration: RelayConfiguration
    /// Names one-shot lookups (`fetch`).
    private var fetches = 0

    /// How a connection made only to deliver to a recipient's inbox relays behaves: it never
    /// AUTHs (the sender's key would tell that relay who wrote to whom, which the wrap's throwaway
    /// key hides), judges the host by `addressedPolicy` (a list is anyone's to write), and waits
    /// 5 s for an answer.
    private let addressedConfiguration: RelayConfiguration
    /// Whether a run is on (between `start` and `stop`).
    private var running = false
    /// Publishes whose sends are still out after the publish returned, by number.
    private var deliveries: [Int: Task<Void, Never>] = [:]
    private var deliveryCount = 0

    public init(
        configuration: RelayConfiguration = RelayConfiguration(),
        addressedPolicy: RelayAddressPolicy? = RelayAddressPolicy(allowsPrivate: false), logger: Logger
    ) {
        self.configuration = configuration
        self.runConfiguration = configuration
        var addressed = configuration
        addressed.authKeys = nil
        addressed.addressPolicy = addressedPolicy
        addressed.publishTimeout = .seconds(5)
        self.addressedConfiguration = addressed
        self.logger = logger
    }

    /// Starts a connection per enabled entry, and per `readers` URL not among them (read only),
    /// with `subscriptions` on each. `authKeys` answers NIP-42 AUTH (an inbox relay serves gift
    /// wraps only to their recipient). Replaces what ran before.
    public func start(
        entries: [RelayEntry], readers: [String] = [], authKeys: Keys? = nil, subscriptions: [Subscription],
        onEvent: @escaping EventHandler, onStatus: @escaping StatusHandler
    ) async {
        await stop()
        // A stop or another start while this one is suspended (each subscription is an actor hop)
        // makes it stale: it cancels the connection in hand and builds no further one (only the
        // subscriptions suspend, so the check after them covers every pass).
        runs += 1
        let run = runs
        self.entries = entries
        self.onEvent = onEvent
        self.onStatus = onStatus
        self.subscriptions = subscriptions
        running = true
        runConfiguration = configuration
        runConfiguration.authKeys = authKeys ?? configuration.authKeys
        for entry in entries where !entry.enabled { statuses[entry.url] = .disabled }
        for entry in entries where entry.enabled && members[entry.url] == nil {
            guard await addMember(entry.url, reader: false, run: run) else { return }
        }
        for url in readers where members[url] == nil && !entries.contains(where: { $0.url == url }) {
            guard await addMember(url, reader: true, run: run) else { return }
        }
        await publishStatuses()
    }

    /// Makes `urls` the read-only members (the account's inbox relays that are not among its
    /// relays): new ones connect with this run's subscriptions, dropped ones close.
    public func setReaders(_ urls: [String]) async {
        guard running else { return }
        let run = runs
        for (url, member) in members where member.reader && !urls.contains(url) {
            for task in member.tasks { task.cancel() }
            members[url] = nil
            statuses[url] = nil
        }
        for url in urls where members[url] == nil && !entries.contains(where: { $0.url == url }) {
            guard await addMember(url, reader: true, run: run) else { return }
        }
        await publishStatuses()
    }

    /// Connects to `url` with this run's subscriptions; false when the run went stale meanwhile.
    private func addMember(_ url: String, reader: Bool, run: Int) async -> Bool {
        let connection = RelayConnection(url: url, configuration: runConfiguration, logger: logger)
        statuses[url] = .connecting
        // The member is in place before the first suspension: the state task may report
        // `.connected` while the subscriptions below are still being added, and a state from a
        // connection that is not (or no longer) a member is dropped.
        members[url] = Member(connection: connection, tasks: [], reader: reader)
        var tasks: [Task<Void, Never>] = [Task { try? await connection.run() }]
        tasks.append(
            Task { [weak self] in
                for await state in await connection.states() { await self?.connectionState(url, state, from: connection) }
            })
        let onEvent = onEvent
        for subscription in subscriptions {
            let stream = await connection.subscribe(id: subscription.id, filters: subscription.filters)
            tasks.append(
                Task {
                    for await event in stream { await onEvent?(url, subscription.id, event) }
                })
        }
        if runs == run, members[url]?.connection === connection {
            members[url]?.tasks = tasks
            return true
        }
        for task in tasks { task.cancel() }
        return false
    }

    /// Stops every connection; statuses go back to a disconnected baseline. Sends that earlier
    /// publishes left running are let finish first (each within its publish timeout): stopping
    /// a member under them would lose what they carry (a wrap, a request to vanish before logout).
    public func stop() async {
        await finishDeliveries()
        runs += 1
        running = false
        for member in members.values {
            for task in member.tasks { task.cancel() }
        }
        members = [:]
        statuses = Dictionary(uniqueKeysWithValues: entries.map { ($0.url, $0.enabled ? RelayStatus.connecting : .disabled) })
        wakeWaiters()
    }

    /// Adds a subscription to every running connection (a backfill page, for example).
    public func subscribe(_ subscription: Subscription, on relay: String? = nil) async {
        for (url, member) in members where relay == nil || relay == url {
            let stream = await member.connection.subscribe(id: subscription.id, filters: subscription.filters)
            let onEvent = onEvent
            Task { for await event in stream { await onEvent?(url, subscription.id, event) } }
        }
    }

    public func unsubscribe(_ id: String, on relay: String) async {
        await members[relay]?.connection.unsubscribe(id: id)
    }

    /// Waits until a relay can take writes, for at most `timeout`: immediately refused when no
    /// relay is enabled or every connected one is read-only (linkstr's send gating).
    public func waitForWritableRelay(timeout: Duration) async throws(SendError) {
        let deadline = ContinuousClock.now + timeout
        while true {
            if !members.values.contains(where: { !$0.reader }) { throw .noEnabledRelays }
            let live = statuses.filter { members[$0.key].map { !$0.reader } ?? false }.values
            if live.contains(.connected) { return }
            // Every relay has settled and the ones that are up refuse writes: waiting cannot help.
            if live.contains(where: \.isReadOnly), !live.contains(.connecting) { throw .onlyReadOnlyRelays }
            guard ContinuousClock.now < deadline else { throw .noRelayConnected }
            await waitForStatusChange(until: deadline)
        }
    }

    /// Publishes `events` to every connected relay at once, and each event also to the relays
    /// `addressed` names for it (a recipient's inbox relays, NIP-17: reached through a member
    /// when one is that relay, else through a connection made for this publish); succeeds when
    /// each was accepted by at least one. A member that refuses with `restricted:`, `blocked:` or
    /// `auth-required:` becomes read-only.
    ///
    /// Returns as soon as every event was accepted somewhere: a slow or silent relay, often a
    /// recipient's inbox reached for the first time, does not hold the send for its whole
    /// timeout. The sends still out carry on in the background, each within its relay's publish
    /// timeout; `finishDeliveries` and `stop` wait for them. A caller cancelled while waiting gets
    /// `notAccepted("cancelled")`, and what was already sent may still arrive.
    public func publish(_ events: [NostrEvent], addressed: [EventID: [String]] = [:]) async throws(SendError) {
        let targets = members.filter { statuses[$0.key] == .connected && !$0.value.reader }
        guard !targets.isEmpty else { throw .noRelayConnected }
        // Each addressed relay once, with the events addressed to it.
        var extra: [String: [NostrEvent]] = [:]
        for event in events {
            for url in addressed[event.id] ?? [] where targets[url] == nil { extra[url, default: []].append(event) }
        }
        var sends: [(url: String, connection: RelayConnection, event: NostrEvent)] = []
        for (url, member) in targets { sends += events.map { (url, member.connection, $0) } }
        var made: [String: Task<Void, Never>] = [:]
        for (url, events) in extra {
            let connection: RelayConnection
            if let member = members[url] {
                connection = member.connection
            } else {
                connection = RelayConnection(url: url, configuration: addressedConfiguration, logger: logger)
                made[url] = Task { try? await connection.run() }
            }
            sends += events.map { (url, connection, $0) }
        }
        deliveryCount += 1
        let delivery = deliveryCount
        let (settled, settle) = AsyncStream.makeStream(of: PublishTally.self)
        let tally = PublishTally(events: Set(events.map(\.id)), sends: sends.count)
        deliveries[delivery] = Task {
            await self.deliver(sends, tally: tally, settle: settle, oneOff: made)
            self.deliveryFinished(delivery)
        }
        var outcome: PublishTally?
        for await answer in settled {
            outcome = answer
            break
        }
        await publishStatuses()
        guard let outcome, outcome.succeeded else { throw .notAccepted(outcome?.lastRefusal ?? "cancelled") }
    }

    /// Waits until the sends that publishes made so far left running have answered or timed out
    /// (so a recipient's inbox still gets what was sent). Publishes made meanwhile are not waited
    /// for, so a busy caller cannot keep it waiting.
    public func finishDeliveries() async {
        for running in Array(deliveries.values) { await running.value }
    }

    /// Runs `sends` at once and counts their answers, yielding the tally to `settle` once it is
    /// settled, then lets the rest answer. A member's refusal is applied as it arrives, so one
    /// that came before the tally settled is in the statuses when the publish returns. A
    /// connection made for this publish (`oneOff`, by URL) is closed once its own sends have
    /// answered or timed out, whatever the others do.
    private nonisolated func deliver(
        _ sends: [(url: String, connection: RelayConnection, event: NostrEvent)], tally: PublishTally,
        settle: AsyncStream<PublishTally>.Continuation, oneOff: [String: Task<Void, Never>]
    ) async {
        var tally = tally
        var outstanding: [String: Int] = [:]
        for send in sends where oneOff[send.url] != nil { outstanding[send.url, default: 0] += 1 }
        if tally.settled { settle.yield(tally) }
        await withTaskGroup(of: SendAnswer.self) { group in
            for (url, connection, event) in sends {
                group.addTask {
                    // The answer is awaited before the result is built. Swift 6.3 at -O loses the
                    // part of a task-group child's tuple result that is written before a
                    // suspension when the rest is written after it (swiftlang/swift#91911):
                    // `(url, event.id, .success(try await …))` returned a dangling event id and
                    // crashed release builds. Reduced in Tests/Regressions/TaskGroupTupleAcrossSuspension.
                    let answer: Result<PublishResult, any Error>
                    do { answer = .success(try await connection.publish(event)) } catch { answer = .failure(error) }
                    return SendAnswer(url: url, connection: connection, event: event.id, answer: answer)
                }
            }
            for await sent in group {
                let wasSettled = tally.settled
                tally.count(sent.event, sent.answer)
                if case .success(let answer) = sent.answer, !answer.accepted, let prefix = answer.prefix,
                    [.restricted, .blocked, .authRequired].contains(prefix)
                {
                    await markReadOnly(sent.url, sent.connection, answer.message)
                }
                if !wasSettled, tally.settled { settle.yield(tally) }
                if let left = outstanding[sent.url] {
                    outstanding[sent.url] = left - 1
                    if left == 1 { oneOff[sent.url]?.cancel() }
                }
            }
        }
        settle.finish()
    }

    private func markReadOnly(_ url: String, _ connection: RelayConnection, _ message: String) async {
        guard let member = members[url], member.connection === connection, !member.reader else { return }
        statuses[url] = .readOnly(message)
        await publishStatuses()
    }

    private func deliveryFinished(_ delivery: Int) {
        deliveries[delivery] = nil
    }

    /// The events `filter` matches on the connected relays (readers included): each relay's
    /// stored events until its EOSE or `CLOSED`, for at most `timeout` in all.
    public func fetch(_ filter: Filter, timeout: Duration) async -> [NostrEvent] {
        fetches += 1
        let id = "linkstr-fetch-\(fetches)"
        let sources = members.filter { statuses[$0.key] == .connected }.map(\.value.connection)
        guard !sources.isEmpty else { return [] }
        enum Answer: Sendable {
            case relay([NostrEvent])
            case timeUp
        }
        var streams: [SubscriptionStream] = []
        for connection in sources { streams.append(await connection.subscribe(id: id, filters: [filter])) }
        let collected = await withTaskGroup(of: Answer.self) { group in
            for stream in streams {
                group.addTask {
                    var events: [NostrEvent] = []
                    for await item in stream {
                        guard case .event(let event) = item else { break }
                        events.append(event)
                    }
                    return .relay(events)
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return .timeUp
            }
            var all: [NostrEvent] = []
            var answered = 0
            for await answer in group {
                guard case .relay(let events) = answer else { break }
                all += events
                answered += 1
                if answered == sources.count { break }
            }
            // Ends the streams still open, so the children that read them return.
            for connection in sources { await connection.unsubscribe(id: id) }
            group.cancelAll()
            return all
        }
        return collected
    }

    // MARK: Status

    private func connectionState(_ url: String, _ state: RelayState, from connection: RelayConnection) async {
        guard members[url]?.connection === connection else { return }
        let status: RelayStatus
        switch state {
        case .idle, .connecting: status = .connecting
        case .connected:
            // A relay that refused writes stays read-only while the connection lasts.
            if case .readOnly = statuses[url] { return }
            status = .connected
        case .authRequired: status = .readOnly("the relay requires authentication")
        case .failed(let reason), .refused(let reason): status = .failed(reason)
        case .stopped: status = .failed("stopped")
        }
        guard statuses[url] != status else { return }
        statuses[url] = status
        await publishStatuses()
    }

    private func publishStatuses() async {
        wakeWaiters()
        await onStatus?(statuses)
    }

    private func waitForStatusChange(until deadline: ContinuousClock.Instant) async {
        let timer = Task { [weak self] in
            try? await Task.sleep(until: deadline)
            await self?.wakeWaiters()
        }
        await withCheckedContinuation { statusWaiters.append($0) }
        timer.cancel()
    }

    private func wakeWaiters() {
        for waiter in statusWaiters { waiter.resume() }
        statusWaiters = []
    }
}

/// One send's answer, as a struct: see the note in `deliver` on tuples across a suspension.
private struct SendAnswer: Sendable {
    let url: String
    let connection: RelayConnection
    let event: EventID
    let answer: Result<PublishResult, any Error>
}

extension RelayStatus {
    var isReadOnly: Bool {
        if case .readOnly = self { return true }
        return false
    }
}
