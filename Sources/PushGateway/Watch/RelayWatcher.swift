import CoreMetrics
public import Foundation
public import Logging
import NostrProtocol
public import NostrRelay
import PostgresNIO
public import ServiceLifecycle

/// Watches relays for gift wraps (kind 1059) to the pubkeys with a `relay_watch` device in the
/// shards this instance holds, and turns live ones into generic pushes through the durable queue.
///
/// - Shards: a heartbeat every second renews this instance's leases and takes free or expired
///   shards up to its fair share (`WatchStore.heartbeat`); the pubkeys of gained shards are
///   subscribed, those of lost shards dropped.
/// - Changes: a trigger on `devices` notifies `linkstr_watch` with the pubkey concerned; the
///   watcher re-reads just that pubkey and re-issues the one chunk that changed (`WatchChunks`).
///   A full re-read every minute catches anything a dropped LISTEN connection missed.
/// - Subscriptions: one REQ per chunk per relay, `{"kinds":[1059],"#p":[…],"since":now−2d}` (the
///   `since` recomputed whenever the REQ is re-sent, reaching back over a lost connection's
///   downtime: `SubscriptionRequestContext`). A changed chunk gets a new subscription id,
///   so an EOSE of the old REQ can never be mistaken for the new one's.
/// - History: events before a subscription's first EOSE are recorded as seen and never pushed,
///   except for pubkeys that were already live on that relay (a re-issued chunk), whose unseen
///   events are new. After a reconnect the same subscription is live from the start: unseen
///   events are ones that arrived while the connection was down. A wrap that one relay returned
///   as history and another forwards in real time moments later is new after all, and pushed
///   (`WrapSighting.Phase.realtime`).
/// - Every event's id and signature are verified before anything is recorded (a forged copy
///   with a real wrap's id must not mark that wrap as seen); the id first, which costs a hash,
///   then the signature. What fails is reported to the relay's connection, which hangs up on a
///   relay past `WATCH_RELAY_MAX_INVALID` a minute, as it does on one past
///   `WATCH_RELAY_MAX_EVENTS_PER_SECOND`.
/// - Bounded inbound path: each connection holds at most `WatchSettings.relayBufferBytes` of
///   messages for the consumers, the consumers hand sightings to batchers that hold at most
///   `WatchSettings.sightingBufferLimit` each, and the ingest loops retry one batch at a time while
///   PostgreSQL is down. Whatever is full makes the step before it wait, back to the relay's
///   socket, which then goes unread. A long pause re-sends the subscriptions from before it
///   (`RelayConfiguration.resubscribeAfterPause`), as a connection lost during one does.
/// - A chunk's REQ goes out at most once per `WATCH_RESUBSCRIBE_SECONDS` (`ResubscribeSchedule`).
public actor RelayWatcher: Service {
    let store: WatchStore
    let settings: WatchSettings
    let metrics: GatewayMetrics
    let logger: Logger
    public nonisolated let instanceID: String
    let relayConfiguration: RelayConfiguration
    /// How often leases are renewed and shards rebalanced.
    let heartbeatInterval: Duration
    /// How often the watched set is re-read in full.
    let resyncInterval: Duration
    let wakeup: WakeupSignal?
    /// Sends jobs this instance just queued and leased itself (the delivery worker's `process`);
    /// nil when this instance does not deliver.
    let directDelivery: DirectDelivery?
    let batchSize = 256

    private var connections: [String: RelayConnection] = [:]
    private var chunks: WatchChunks
    private var generations: [Int: Int] = [:]
    private var heldShards: Set<Int> = []
    /// Per relay: pubkeys whose subscription has reached EOSE there.
    private var livePubkeys: [String: Set<String>] = [:]
    /// Written by consumers on every event, so behind a lock rather than the actor.
    private let lastEventAt = Locked<[String: Date]>([:])
    private var consumers: [String: Task<Void, Never>] = [:]
    private var changedPubkeys: Set<String> = []
    /// Wakes the maintenance loop early (a registration changed); it also ticks every heartbeat.
    private let wakeMaintainer: WakeupSignal
    /// One batcher per ingest loop; a recipient's sightings always go to the same one, so two
    /// statements never coalesce for the same device at once (they would both see no pending
    /// job and both queue one).
    private let batchers: [Batcher<WrapSighting>]
    /// Changes to `watch_live` (EOSE reached, pubkeys no longer watched), in the order they
    /// happened, waiting for `liveWriteLoop`.
    private let liveWrites = Batcher<LiveWrite>()
    /// Every relay forwards the same wraps: each id's signature is checked once, not once per relay.
    private let verifiedWraps = VerifiedEventCache()
    private var resyncRequested = false
    /// Chunks a relay closed (`CLOSED`): how often in a row (for the backoff), and when to issue
    /// them again; `retryAt` is nil once re-issued, until an EOSE shows the relay took the chunk.
    private struct ClosedChunk {
        var closures: Int
        var retryAt: ContinuousClock.Instant?
    }

    private var closedChunks: [Int: ClosedChunk] = [:]
    /// Which changed chunks' REQs may go out when.
    private var schedule: ResubscribeSchedule
    /// Wakes the maintenance loop when the next held-back chunk is due.
    private var dueTimer: Task<Void, Never>?
    private var dueTimerAt: ContinuousClock.Instant?
    /// Each relay's statistics as of the last scrape, to advance the counters by the difference.
    private var exported: [String: RelayStatistics] = [:]
    private var exporting = false

    public init(
        store: WatchStore, metrics: GatewayMetrics, logger: Logger, instanceID: String? = nil,
        relayConfiguration: RelayConfiguration = RelayConfiguration(), heartbeatInterval: Duration = .seconds(1),
        resyncInterval: Duration = .seconds(60), wakeup: WakeupSignal? = nil, directDelivery: DirectDelivery? = nil
    ) {
        self.wakeup = wakeup
        self.directDelivery = directDelivery
        self.store = store
        self.settings = store.settings
        self.metrics = metrics
        let instanceID = instanceID ?? UUID().uuidString.lowercased()
        var logger = logger
        logger[metadataKey: "watch.instance"] = "\(instanceID.prefix(8))"
        self.logger = logger
        self.instanceID = instanceID
        self.relayConfiguration = relayConfiguration
        self.heartbeatInterval = heartbeatInterval
        self.resyncInterval = resyncInterval
        self.chunks = WatchChunks(size: store.settings.chunkSize)
        self.wakeMaintainer = WakeupSignal(interval: heartbeatInterval)
        self.batchers = (0..<2).map { _ in Batcher<WrapSighting>(limit: WatchSettings.sightingBufferLimit) }
        self.schedule = ResubscribeSchedule(interval: .seconds(store.settings.resubscribeSeconds))
    }

    // MARK: Service

    public func run() async throws {
        guard let key = await bootstrap() else { return }
        var configuration = relayConfiguration
        configuration.authKeys = Keys(secretKey: key)
        configuration.limits = settings.relayLimits
        configuration.inboundBufferBytes = WatchSettings.relayBufferBytes
        configuration.resubscribeAfterPause = WatchSettings.resubscribeAfterPause
        for url in settings.relays {
            connections[url] = RelayConnection(url: url, configuration: configuration, logger: logger)
        }
        let connections = self.connections
        metrics.onScrape { [weak self] in await self?.exportRelayMetrics() }
        await withTaskGroup(of: Void.self) { group in
            for (url, connection) in connections {
                group.addTask { try? await connection.run() }
                group.addTask { await self.countConnects(url, connection) }
            }
            for batcher in batchers { group.addTask { await self.ingestLoop(batcher) } }
            group.addTask { await self.liveWriteLoop() }
            group.addTask { await cancelWhenGracefulShutdown { await self.maintainLoop() } }
            group.addTask { await cancelWhenGracefulShutdown { await self.listenLoop() } }
            // Until shutdown (graceful, or the task cancelled); the connections stop themselves.
            try? await gracefulShutdown()
            for consumer in consumers.values { await consumer.value }
            for batcher in batchers { batcher.close() }
            liveWrites.close()
        }
        // Sends handed to direct delivery are drained by the delivery worker, which stops after
        // this service and before the APNs connections and the database pool.
        do {
            try await store.release(instance: instanceID)
        } catch {
            logger.notice("could not release shard leases; they expire on their own", metadata: ["error.type": "\(type(of: error))"])
        }
        logger.info("relay watcher stopped")
    }

    /// The gateway key and the shard rows; retried until the database is there and migrated.
    private func bootstrap() async -> SecretKey? {
        var delay = Duration.milliseconds(200)
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                let key = try await store.gatewayKey()
                try await store.prepareShards()
                logger.info(
                    "relay watcher starting",
                    metadata: ["watch.relays": "\(settings.relays.count)", "watch.public_key": "\(key.publicKey.hex)"])
                return key
            } catch {
                logger.notice("relay watcher waiting for the database", metadata: ["error.type": "\(type(of: error))"])
                let pause = delay
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: pause) }
                delay = min(delay * 2, .seconds(5))
            }
        }
        return nil
    }

    // MARK: Keeping the watched set current

    /// Heartbeats, pending notifications and periodic full re-reads, one at a time, so chunk
    /// changes never interleave.
    private func maintainLoop() async {
        var lastHeartbeat = ContinuousClock.now - heartbeatInterval
        var lastResync = ContinuousClock.now
        while !Task.isCancelled {
            do {
                if ContinuousClock.now - lastHeartbeat >= heartbeatInterval {
                    lastHeartbeat = .now
                    try await heartbeat()
                }
                if resyncRequested || ContinuousClock.now - lastResync >= resyncInterval {
                    lastResync = .now
                    resyncRequested = false
                    try await resync()
                }
                try await applyNotifications()
                reissueClosedChunks()
                await sendDueChunks()
            } catch {
                logger.warning("relay watcher maintenance failed", metadata: Self.errorMetadata(error))
            }
            // Woken by a notification, or at the next tick (a heartbeat interval).
            await wakeMaintainer.wait()
        }
    }

    private func heartbeat() async throws {
        let held = try await store.heartbeat(instance: instanceID)
        let gained = held.subtracting(heldShards)
        let lost = heldShards.subtracting(held)
        guard !gained.isEmpty || !lost.isEmpty else { return }
        let added = try await store.watchedPubkeys(inShards: gained)
        let removed = chunks.chunks.flatMap { $0 }.filter { lost.contains(WatchShard.of(pubkey: $0, shards: settings.shards)) }
        // Pubkeys another instance (or an earlier run) already served live: what nobody claimed
        // for them arrived while the shard was unwatched, and is pushed rather than taken for
        // history.
        for url in settings.relays {
            let live = try await store.livePubkeys(Array(added), relay: url)
            livePubkeys[url, default: []].formUnion(live)
        }
        heldShards = held
        logger.info(
            "watch shards changed",
            metadata: ["watch.gained": "\(gained.count)", "watch.lost": "\(lost.count)", "watch.held": "\(held.count)"])
        await apply(inserted: added, removed: removed)
    }

    private func resync() async throws {
        let watched = try await store.watchedPubkeys(inShards: heldShards)
        let current = Set(chunks.chunks.flatMap { $0 })
        let unwatched = current.subtracting(watched)
        await apply(inserted: watched.subtracting(current), removed: unwatched)
        forgetLive(unwatched)
    }

    /// A pubkey's devices changed (LISTEN); it is re-read with the next maintenance round.
    func noteChanged(_ pubkey: String) {
        changedPubkeys.insert(pubkey)
        wakeMaintainer.signal()
    }

    private func applyNotifications() async throws {
        guard !changedPubkeys.isEmpty else { return }
        let mine = changedPubkeys.filter { heldShards.contains(WatchShard.of(pubkey: $0, shards: settings.shards)) }
        changedPubkeys.removeAll()
        guard !mine.isEmpty else { return }
        let watched = try await store.watchedSubset(of: Array(mine))
        let unwatched = mine.filter { !watched.contains($0) }
        await apply(inserted: watched.filter { !chunks.contains($0) }, removed: unwatched.filter { chunks.contains($0) })
        // No longer watched at all: a later registration starts from history again.
        forgetLive(unwatched)
    }

    private func listenLoop() async {
        while !Task.isCancelled {
            do {
                try await store.database.withConnection { connection in
                    try await connection.underlying.listen(on: "linkstr_watch") { notifications in
                        // Whatever changed while no LISTEN was active.
                        self.requestResync()
                        for try await notification in notifications {
                            self.noteChanged(notification.payload)
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.notice("LISTEN connection lost; reconnecting", metadata: ["error.type": "\(type(of: error))"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// The next maintenance round re-reads the whole watched set.
    private func requestResync() {
        resyncRequested = true
        wakeMaintainer.signal()
    }

    // MARK: Subscriptions

    private func apply(inserted: some Collection<String>, removed: some Collection<String>) async {
        guard !inserted.isEmpty || !removed.isEmpty else { return }
        let changed = chunks.apply(inserted: inserted, removed: removed)
        for pubkey in removed {
            for relay in livePubkeys.keys { livePubkeys[relay]?.remove(pubkey) }
        }
        schedule.note(changed)
        await sendDueChunks()
        metrics.watchState(pubkeys: chunks.count, shards: heldShards.count)
        logger.debug(
            "watched set changed",
            metadata: [
                "watch.added": "\(inserted.count)", "watch.removed": "\(removed.count)", "watch.pubkeys": "\(chunks.count)",
            ])
    }

    /// Issues the changed chunks whose interval is over, and sets the wake-up for the next one.
    private func sendDueChunks() async {
        for chunk in schedule.takeDue(at: .now) where chunk < chunks.chunks.count { await resubscribe(chunk) }
        guard let due = schedule.nextDue(now: .now), due != dueTimerAt else { return }
        dueTimer?.cancel()
        dueTimerAt = due
        let wake = wakeMaintainer
        dueTimer = Task {
            try? await Task.sleep(until: due)
            if !Task.isCancelled { wake.signal() }
        }
    }

    private func resubscribe(_ chunk: Int) async {
        let previous = generations[chunk].map { "w\(chunk).\($0)" }
        let generation = (generations[chunk] ?? 0) + 1
        generations[chunk] = generation
        let id = "w\(chunk).\(generation)"
        let pubkeys = chunks.chunks[chunk].sorted()
        for (url, connection) in connections {
            if let previous { await connection.unsubscribe(id: previous) }
            guard !pubkeys.isEmpty else { continue }
            let window = WatchSettings.windowSeconds
            // A REQ re-sent after a lost connection reaches back over the time it was down, so
            // wraps published meanwhile but dated back past `now − window` are not skipped.
            let stream = await connection.subscribe(id: id) { (context: SubscriptionRequestContext) in
                [Filter(kinds: [EventKind.giftWrap], tags: ["p": pubkeys], since: context.since(window: window, now: UnixTime.now()))]
            }
            let alreadyLive = livePubkeys[url, default: []].intersection(pubkeys)
            let key = "\(url) \(id)"
            let context = ConsumerContext(
                chunk: chunk, generation: generation, relay: url, connection: connection, subscriptionID: id,
                pubkeys: Set(pubkeys), alreadyLive: alreadyLive)
            consumers[key] = Task { await self.consume(stream, context) }
        }
    }

    struct ConsumerContext: Sendable {
        let chunk: Int
        let generation: Int
        let relay: String
        let connection: RelayConnection
        let subscriptionID: String
        let pubkeys: Set<String>
        let alreadyLive: Set<String>
    }

    /// Reads one subscription until it is closed. Verification runs here, off the actor. Waiting
    /// for room in a full batcher is what makes the connection stop reading the relay.
    private nonisolated func consume(_ stream: SubscriptionStream, _ context: ConsumerContext) async {
        var reachedEOSE = false
        let counters = metrics.watchRelayCounters(relay: context.relay)
        for await item in stream {
            switch item {
            case .event(let event):
                counters.events.increment()
                // Cheap checks before the signature: a wrap to exactly one pubkey this chunk
                // asked for, or it is junk the relay should not have sent.
                guard event.kind == EventKind.giftWrap, let recipient = GiftWrap.soleRecipient(of: event),
                    context.pubkeys.contains(recipient)
                else {
                    counters.invalid.increment()
                    context.connection.countInvalid()
                    continue
                }
                // The id (a hash) before the signature (tens of µs): `check` stops at a bad id.
                switch verifiedWraps.check(event) {
                case .verified: counters.signatureChecks.increment()
                case .alreadyVerified: break
                case .invalid(let error):
                    if error == .invalidSignature { counters.signatureChecks.increment() }
                    counters.invalid.increment()
                    context.connection.countInvalid()
                    continue
                }
                let phase: WrapSighting.Phase = reachedEOSE ? .realtime : context.alreadyLive.contains(recipient) ? .resumed : .history
                let batcher = batchers[Int(UInt(bitPattern: recipient.hashValue) % UInt(batchers.count))]
                guard
                    await batcher.send(
                        WrapSighting(wrapID: event.id.hex, recipient: recipient, relay: context.relay, phase: phase, receivedAt: .now))
                else { continue }
                lastEventAt.withLock { $0[context.relay] = Date() }
            case .endOfStoredEvents:
                if !reachedEOSE {
                    reachedEOSE = true
                    await markLive(context)
                }
            case .closed:
                // The connection logged the relay's text (escaped, throttled); it is not repeated here.
                await chunkClosed(context.chunk, generation: context.generation)
            }
        }
        await consumerEnded("\(context.relay) \(context.subscriptionID)")
    }

    /// A relay refused or ended a chunk's subscription (rate limit, too many subscriptions): the
    /// chunk is issued again after 5 s, doubling up to 5 minutes while it keeps happening.
    private func chunkClosed(_ chunk: Int, generation: Int) {
        guard generations[chunk] == generation else { return }
        let closures = (closedChunks[chunk]?.closures ?? 0) + 1
        let delay = Duration.seconds(min(300, 5 << min(closures - 1, 6)))
        closedChunks[chunk] = ClosedChunk(closures: closures, retryAt: .now + delay)
        metrics.watchSubscriptionClosed()
    }

    /// Closed chunks whose retry is due join the schedule, so a retry never makes a chunk's REQ
    /// go out more often than any other change would.
    private func reissueClosedChunks() {
        let now = ContinuousClock.now
        let due = closedChunks.filter { $0.value.retryAt.map { $0 <= now } ?? false }.map(\.key)
        for chunk in due where chunk < chunks.chunks.count {
            closedChunks[chunk]?.retryAt = nil
            schedule.note([chunk])
        }
    }

    /// The chunk's subscription reached EOSE on the relay: its pubkeys are live there. The
    /// database learns it from `liveWriteLoop`, so the consumer goes on with the events after EOSE
    /// at once.
    private func markLive(_ context: ConsumerContext) {
        if let closed = closedChunks[context.chunk], closed.retryAt == nil { closedChunks[context.chunk] = nil }
        let live = context.pubkeys.filter(chunks.contains)
        livePubkeys[context.relay, default: []].formUnion(live)
        if !live.isEmpty { liveWrites.add(.mark(relay: context.relay, pubkeys: Array(live))) }
    }

    /// `pubkeys` are no longer watched: queued behind any mark still waiting for them. Callers
    /// queue it after `apply` took the pubkeys out of `chunks`: `markLive` only marks pubkeys in
    /// `chunks`, so no mark for them can be queued behind it (until a later read of the database
    /// adds them back, watched again).
    private func forgetLive(_ pubkeys: some Collection<String>) {
        if !pubkeys.isEmpty { liveWrites.add(.forget(Array(pubkeys))) }
    }

    /// Writes the live marks and forgets in batches, in order. A gateway that starts or
    /// re-subscribes gets one EOSE per chunk and relay almost at once (200 for 100,000 pubkeys on
    /// one relay); as one insert each, awaited by its consumer, they ran alongside the first live
    /// wraps and held each chunk's wraps back until its own insert was through
    /// (pg_stat_statements: 65 ms per 500-row insert in that storm). A write that fails after a few
    /// tries (two while shutting down, so a database that is gone does not hold the shutdown up) is
    /// dropped with a warning: a lost mark means a later takeover treats the pubkeys' unclaimed
    /// wraps as history; a lost forget is caught by the maintenance sweep (`GatewayStore.prune`
    /// deletes rows of pubkeys nothing watches), and until then a mark for an unwatched pubkey
    /// is refused by the insert itself.
    private nonisolated func liveWriteLoop() async {
        while let writes = await liveWrites.next(max: 64) {
            for step in LiveWrite.plan(writes) {
                var attempt = 0
                retry: while true {
                    attempt += 1
                    do {
                        switch step {
                        case .mark(let relay, let pubkeys): try await store.markLive(pubkeys, relay: relay)
                        case .forget(let pubkeys): try await store.forgetLive(pubkeys)
                        }
                        break retry
                    } catch {
                        let dropped = Task.isCancelled || attempt >= (Task.isShuttingDownGracefully ? 2 : 5)
                        logger.warning(
                            "could not record live pubkeys",
                            metadata: Self.errorMetadata(error).merging([
                                "watch.attempt": "\(attempt)", "watch.live_write": "\(step.kind)", "watch.dropped": "\(dropped)",
                            ]) { $1 })
                        if dropped { break retry }
                        try? await Task.sleep(for: .milliseconds(100 * attempt * attempt))
                    }
                }
            }
        }
    }

    private func consumerEnded(_ key: String) { consumers[key] = nil }

    private nonisolated func countConnects(_ url: String, _ connection: RelayConnection) async {
        for await state in await connection.states() where state == .connected {
            metrics.watchRelayConnected(relay: url)
        }
    }

    // MARK: Recording

    private nonisolated func ingestLoop(_ batcher: Batcher<WrapSighting>) async {
        let relayToQueue = metrics.watchRelayToQueueTimer()
        // Returning early (cancelled) must not leave consumers waiting for room that never comes.
        defer { batcher.close() }
        // Shutting down without a database: once one batch is given up, the rest are dropped
        // without trying, or each would hold the shutdown up for its own retries.
        var givenUp = 0
        while let batch = await batcher.next(max: batchSize) {
            if givenUp > 0 {
                givenUp += batch.count
                continue
            }
            var attempt = 0
            while true {
                attempt += 1
                do {
                    let result = try await store.record(batch, leaseSeconds: directDelivery?.lease())
                    // Not awaited: the next batch is recorded while this one is sent.
                    directDelivery?.start(result.leased)
                    let distinct = Set(batch.map(\.wrapID)).count
                    metrics.watchRecorded(duplicates: distinct - result.claimed, queued: result.jobs, coalesced: result.merged)
                    if result.overBudget > 0 { metrics.push(outcome: "over_budget", reason: nil, count: result.overBudget) }
                    let now = ContinuousClock.now
                    for sighting in batch where sighting.live {
                        relayToQueue.recordNanoseconds(Self.nanoseconds(now - sighting.receivedAt))
                    }
                    if result.jobs > result.leased.count { wakeup?.signal() }
                    if result.jobs + result.merged > 0 {
                        logger.debug(
                            "relay-watch pushes queued", metadata: ["push.jobs": "\(result.jobs)", "push.coalesced": "\(result.merged)"])
                    }
                    break
                } catch {
                    // The database may be restarting: keep the batch (nothing of it was committed)
                    // and try again, giving up only on shutdown.
                    logger.warning(
                        "could not record gift wraps", metadata: Self.errorMetadata(error).merging(["watch.attempt": "\(attempt)"]) { $1 })
                    if Task.isCancelled { return }
                    // Shutting down: a few more tries, then the batch is given up (and logged)
                    // rather than holding the process up. Those wraps were not claimed, so they
                    // come back as history after a restart and are not pushed.
                    if Task.isShuttingDownGracefully, attempt >= 3 {
                        givenUp = batch.count
                        break
                    }
                    try? await Task.sleep(for: .milliseconds(min(5000, 100 * attempt * attempt)))
                }
            }
        }
        if givenUp > 0 {
            logger.error("gave up recording gift wraps at shutdown", metadata: ["watch.wraps": "\(givenUp)"])
        }
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
    }

    /// The error's type and, for PostgreSQL, its SQLSTATE and message (our own statements; the
    /// messages name tables and constraints, never values).
    static func errorMetadata(_ error: any Error) -> Logger.Metadata {
        var metadata: Logger.Metadata = ["error.type": "\(type(of: error))"]
        if let psql = error as? PSQLError {
            metadata["db.code"] = "\(psql.serverInfo?[.sqlState] ?? "none")"
            metadata["db.message"] = "\(psql.serverInfo?[.message] ?? "\(psql.code)")"
        }
        return metadata
    }

    // MARK: Status

    /// One watched relay as operators see it.
    public struct WatchedRelay: Sendable, Equatable {
        public var url: String
        public var state: RelayState
        public var lastEventAt: Date?
        public var statistics: RelayStatistics
        /// Watched pubkeys whose subscription on this relay has reached EOSE.
        public var livePubkeys: Int

        package init(url: String, state: RelayState, lastEventAt: Date?, statistics: RelayStatistics, livePubkeys: Int) {
            self.url = url
            self.state = state
            self.lastEventAt = lastEventAt
            self.statistics = statistics
            self.livePubkeys = livePubkeys
        }
    }

    public struct Status: Sendable, Equatable {
        public var relays: [WatchedRelay]
        public var shards: [Int]
        public var watchedPubkeys: Int
        public var pendingSightings: Int

        package init(relays: [WatchedRelay], shards: [Int], watchedPubkeys: Int, pendingSightings: Int) {
            self.relays = relays
            self.shards = shards
            self.watchedPubkeys = watchedPubkeys
            self.pendingSightings = pendingSightings
        }
    }

    /// Per-relay gauges and counters from each connection's statistics, at scrape time: the
    /// connections live in `NostrRelay`, which knows nothing of metrics.
    func exportRelayMetrics() async {
        // Two scrapes at once would count the same difference twice.
        guard !exporting else { return }
        exporting = true
        defer { exporting = false }
        for url in settings.relays {
            guard let connection = connections[url] else { continue }
            let now = await connection.statistics
            let before = exported[url] ?? RelayStatistics()
            exported[url] = now
            if case .connected = await connection.state {
                metrics.watchRelayUp(relay: url, true)
            } else {
                metrics.watchRelayUp(relay: url, false)
            }
            metrics.watchRelayTraffic(
                relay: url, eventsPerSecond: now.eventsPerSecond, invalidPerSecond: now.invalidPerSecond,
                readingPaused: now.readingPaused)
            for breach in [RelayTraffic.Breach.flood, .invalid] {
                metrics.watchRelayLimitDisconnects(
                    relay: url, reason: breach.rawValue,
                    count: now.limitDisconnects[breach, default: 0] - before.limitDisconnects[breach, default: 0])
            }
            let paused = now.readPausedTime - before.readPausedTime
            metrics.watchRelayPauses(
                relay: url, pausedSeconds: Double(paused.components.seconds) + Double(paused.components.attoseconds) / 1e18,
                resubscribed: now.resubscribedAfterPause - before.resubscribedAfterPause,
                suppressedLogLines: now.suppressedLogLines - before.suppressedLogLines)
        }
        metrics.watchPendingWraps(batchers.reduce(0) { $0 + $1.count })
    }

    public func status() async -> Status {
        let lastEvents = lastEventAt.withLock { $0 }
        var relays: [WatchedRelay] = []
        for url in settings.relays {
            guard let connection = connections[url] else {
                relays.append(WatchedRelay(url: url, state: .idle, lastEventAt: nil, statistics: RelayStatistics(), livePubkeys: 0))
                continue
            }
            relays.append(
                WatchedRelay(
                    url: url, state: await connection.state, lastEventAt: lastEvents[url], statistics: await connection.statistics,
                    livePubkeys: livePubkeys[url]?.count ?? 0))
        }
        return Status(
            relays: relays, shards: heldShards.sorted(), watchedPubkeys: chunks.count,
            pendingSightings: batchers.reduce(0) { $0 + $1.count })
    }
}
