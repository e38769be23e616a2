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
///   subscribed, those of lost shards dropped. For a gained shard's pubkeys that were live under
///   its previous owner, the REQ reaches back from when that owner stopped watching
///   (`WatchStore.ShardLeases.watchedUntil`) until their first EOSE here.
/// - Changes: a trigger on `devices` notifies `linkstr_watch` with the pubkey concerned; the
///   watcher re-reads just that pubkey and re-issues the one chunk that changed (`WatchChunks`).
///   A full re-read every minute catches anything a dropped LISTEN connection missed.
/// - Where: every pubkey on `RELAYS`, and each user's own relays beyond them (their NIP-17 kind
///   10050 list, else the relays their devices registered) as `RelayWatchPlan` decides, within
///   `WATCH_MAX_RELAYS` and `WATCH_MAX_RELAYS_PER_USER`. Each set of relays that watch the same
///   pubkeys is a `WatchGroup`: `RELAYS` is one, each user relay another, connected only while
///   some user's plan watches it and only to addresses the `RelayAddressPolicy` allows. The kind
///   10050 lists are followed on `INDEXER_RELAYS` with one subscription per chunk of `RELAYS`'
///   group (`{"kinds":[10050],"authors":[…]}`), so a new list moves the watch within seconds.
/// - Subscriptions: one REQ per chunk per relay, `{"kinds":[1059],"#p":[…],"since":now−2d}` (the
///   `since` recomputed whenever the REQ is re-sent, reaching back over a lost connection's
///   downtime: `SubscriptionRequestContext`; never past what `seen_wraps` remembers: `since`).
///   A changed chunk gets a new subscription id, so an EOSE of the old REQ can never be mistaken
///   for the new one's.
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
///   messages for the consumers, the consumers hand sightings to a batcher that holds at most
///   `WatchSettings.sightingBufferLimit` a lane, and the ingest loop retries one batch at a time
///   while PostgreSQL is down. Whatever is full makes the step before it wait, back to the relay's
///   socket, which then goes unread. A long pause re-sends the subscriptions from before it
///   (`RelayConfiguration.resubscribeAfterPause`), as a connection lost during one does.
/// - A chunk's REQ goes out at most once per `WATCH_RESUBSCRIBE_SECONDS` per group
///   (`ResubscribeSchedule`).
/// - What cannot be watched is said: a relay that closes the REQ with `auth-required:` (after the
///   gateway's own AUTH) or `restricted:`, one that cannot be reached, one the address policy
///   refuses and one past the instance's cap are reported per relay (`watch_relay_states`, read
///   by `GET /v1/devices`), counted in `/admin/status` and the metrics.
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
    /// Which users' relays may be connected to (`WATCH_ALLOW_PRIVATE_RELAYS`).
    let policy: RelayAddressPolicy

    /// The configuration every connection starts from (the gateway key, the limits); set by `run`.
    private var connectionConfiguration = RelayConfiguration()
    private var connections: [String: RelayConnection] = [:]
    /// Each connection's `run` and the task following its states.
    private var connectionTasks: [String: Task<Void, Never>] = [:]
    /// Each connection's state as last reported.
    private var connectionStates: [String: RelayState] = [:]
    private var shuttingDown = false
    /// `RELAYS`' group (every held pubkey) and one group per user relay the plan watches.
    private var groups: [WatchGroup.Scope: WatchGroup]
    private var heldShards: Set<Int> = []
    /// The held users that name relays of their own (an inbox list or registered relays).
    private var ownRelays: [String: RelayWatchPlan.UserRelays] = [:]
    /// The newest inbox list applied per user this run (created_at, id), to apply only newer ones.
    private var inboxStamps: [String: (createdAt: Int64, id: String)] = [:]
    private var plan = RelayWatchPlan.empty
    /// `ownRelays` changed since `plan` was made.
    private var planStale = false
    /// Relays that closed a REQ with `auth-required:` or `restricted:`, until one of their REQs
    /// reaches EOSE.
    private var relayRefusals: [String: RelayWatchPlan.RelayState] = [:]
    /// What `watch_relay_states` holds for this instance; nil until first written.
    private var recordedStates: [String: RelayWatchPlan.RelayState]?
    /// Per relay: pubkeys whose subscription has reached EOSE there.
    private var livePubkeys: [String: Set<String>] = [:]
    /// Per relay: pubkeys that were live there under the previous owner of their shard, until
    /// their first EOSE here, with the moment that owner stopped watching (Unix seconds). Their
    /// REQ reaches back a window from that moment, not from now: a wrap published while the shard
    /// had no watcher may be dated up to the window before it.
    private var takeoverFloors: [String: [String: Int64]] = [:]
    /// `WatchStore.ShardLeases.watchedUntil` of the shards taken and not yet read in full.
    private var takenShardsWatchedUntil: [Int: Int64] = [:]
    /// When each relay last sent a wrap that went on, to the second. Written by consumers (at
    /// most once a second each), so behind a lock rather than the actor.
    private let lastEventAt = Locked<[String: Date]>([:])
    private var consumers: [String: Task<Void, Never>] = [:]
    private var changedPubkeys: Set<String> = []
    /// Wakes the maintenance loop early (a registration changed); it also ticks every heartbeat.
    private let wakeMaintainer: WakeupSignal
    /// The sightings waiting for the ingest loop. One loop records them, one statement at a
    /// time: each statement then carries everything that arrived while the one before ran, and
    /// two statements never coalesce for the same device at once (they would both see no pending
    /// job and both queue one). Sightings from `RELAYS` go in lane 0 and those from users' own
    /// relays in lane 1: a flood from users' relays fills only its own lane and takes at most a
    /// quarter of each batch while `RELAYS` has wraps waiting (`Batcher`).
    private let sightings: Batcher<WrapSighting>
    /// Changes to `watch_live` (EOSE reached, pubkeys no longer watched), in the order they
    /// happened, waiting for `liveWriteLoop`.
    private let liveWrites = Batcher<LiveWrite>()
    /// Every relay forwards the same wraps: each id's signature is checked once, not once per relay.
    private let verifiedWraps = VerifiedEventCache()
    private var resyncRequested = false
    /// The last REQ generation handed out, in any group.
    private var generationCounter = 0
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
        self.policy = RelayAddressPolicy(allowsPrivate: store.settings.allowPrivateRelays)
        self.groups = [
            .defaults: WatchGroup(
                scope: .defaults, chunkSize: store.settings.chunkSize, resubscribeInterval: .seconds(store.settings.resubscribeSeconds))
        ]
        self.wakeMaintainer = WakeupSignal(interval: heartbeatInterval)
        self.sightings = Batcher<WrapSighting>(limit: WatchSettings.sightingBufferLimit, lanes: 2)
    }

    /// Every pubkey this instance watches (`RELAYS`' group holds them all).
    private var watched: WatchChunks { groups[.defaults]!.chunks }

    // MARK: Service

    public func run() async throws {
        guard let key = await bootstrap() else { return }
        var configuration = relayConfiguration
        configuration.authKeys = Keys(secretKey: key)
        configuration.limits = settings.relayLimits
        configuration.inboundBufferBytes = WatchSettings.relayBufferBytes
        configuration.resubscribeAfterPause = WatchSettings.resubscribeAfterPause
        connectionConfiguration = configuration
        for url in settings.relays + settings.indexerRelays { openConnection(url) }
        metrics.onScrape { [weak self] in await self?.exportRelayMetrics() }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.ingestLoop() }
            group.addTask { await self.liveWriteLoop() }
            group.addTask { await cancelWhenGracefulShutdown { await self.maintainLoop() } }
            group.addTask { await cancelWhenGracefulShutdown { await self.listenLoop() } }
            // Until shutdown (graceful, or the task cancelled).
            try? await gracefulShutdown()
            await closeAllConnections()
            for consumer in consumers.values { await consumer.value }
            sightings.close()
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

    // MARK: Connections

    /// `RELAYS` and `INDEXER_RELAYS` are the operator's; every other relay came from a user.
    private func isConfigured(_ url: String) -> Bool {
        settings.relays.contains(url) || settings.indexerRelays.contains(url)
    }

    /// Connects to `url` unless already connected. A user's relay is judged by the address
    /// policy before every attempt (`RelayConfiguration.addressPolicy`).
    private func openConnection(_ url: String) {
        guard connections[url] == nil, !shuttingDown else { return }
        var configuration = connectionConfiguration
        let configured = isConfigured(url)
        if !configured {
            configuration.addressPolicy = policy
            configuration.limits = settings.userRelayLimits
            configuration.inboundBufferBytes = WatchSettings.userRelayBufferBytes
        }
        let connection = RelayConnection(url: url, configuration: configuration, logger: logger)
        connections[url] = connection
        connectionTasks[url] = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { try? await connection.run() }
                group.addTask { await self.followStates(url, connection, configured: configured) }
            }
        }
    }

    /// Stops the connection to `url`; its subscriptions' streams end, and with them their consumers.
    private func closeConnection(_ url: String) {
        connections[url] = nil
        connectionStates[url] = nil
        livePubkeys[url] = nil
        takeoverFloors[url] = nil
        relayRefusals[url] = nil
        lastEventAt.withLock { $0[url] = nil }
        connectionTasks.removeValue(forKey: url)?.cancel()
    }

    private func closeAllConnections() async {
        shuttingDown = true
        dueTimer?.cancel()
        let tasks = Array(connectionTasks.values)
        for url in Array(connections.keys) { closeConnection(url) }
        for task in tasks { await task.value }
    }

    private nonisolated func followStates(_ url: String, _ connection: RelayConnection, configured: Bool) async {
        for await state in await connection.states() {
            if configured, state == .connected { metrics.watchRelayConnected(relay: url) }
            await noteState(url, state, of: connection)
        }
    }

    private func noteState(_ url: String, _ state: RelayState, of connection: RelayConnection) {
        guard connections[url] === connection else { return }
        // A failed or refused relay stays so while it tries again, until it connects.
        switch (connectionStates[url], state) {
        case (.failed?, .connecting), (.refused?, .connecting): return
        default: connectionStates[url] = state
        }
    }

    /// What a user is told of `url`: what its REQs were answered, else what its connection says.
    /// A relay still connecting for the first time counts as watched; one that failed stays
    /// unreachable until it connects.
    private func reportedState(_ url: String, previous: RelayWatchPlan.RelayState?) -> RelayWatchPlan.RelayState {
        if let refusal = relayRefusals[url] { return refusal }
        switch connectionStates[url] {
        case .connected?: return .watching
        case .failed?: return .unreachable
        case .refused?: return .refused
        case .authRequired?: return .authRequired
        case .idle?, .connecting?, .stopped?, nil: return previous ?? .watching
        }
    }

    /// Every relay this instance connects to for users or has to turn down, with its state.
    private func relayStates() -> [String: RelayWatchPlan.RelayState] {
        var states: [String: RelayWatchPlan.RelayState] = [:]
        for url in settings.relays { states[url] = reportedState(url, previous: recordedStates?[url]) }
        for url in plan.extraRelays.keys { states[url] = reportedState(url, previous: recordedStates?[url]) }
        for url in plan.overLimitRelays { states[url] = .overLimit }
        return states
    }

    /// Writes the relay states for `GET /v1/devices` when they changed; a failed write is tried
    /// again with the next maintenance round.
    private func recordRelayStates() async {
        let states = relayStates()
        guard states != recordedStates else { return }
        do {
            try await store.recordRelayStates(states, replacing: recordedStates, instance: instanceID)
            recordedStates = states
        } catch {
            logger.warning("could not record relay states", metadata: Self.errorMetadata(error))
        }
    }

    // MARK: Keeping the watched set current

    /// Heartbeats, pending notifications, periodic full re-reads and new plans, one at a time, so
    /// chunk changes never interleave.
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
                if planStale { await replan() }
                reissueClosedChunks()
                await sendDueChunks()
                await recordRelayStates()
            } catch {
                logger.warning("relay watcher maintenance failed", metadata: Self.errorMetadata(error))
            }
            // Woken by a notification, or at the next tick (a heartbeat interval).
            await wakeMaintainer.wait()
        }
    }

    private func heartbeat() async throws {
        let leases = try await store.heartbeat(instance: instanceID, caughtUp: heldShards.subtracting(catchingUpShards()))
        let held = leases.held
        // Kept until the shard's pubkeys are read in full: a read that fails is retried by the
        // next heartbeat, which sees the shard as held already. Only shards not read yet: the
        // moment of one read and still catching up comes back with every renewal.
        takenShardsWatchedUntil.merge(leases.watchedUntil.filter { !heldShards.contains($0.key) }, uniquingKeysWith: min)
        takenShardsWatchedUntil = takenShardsWatchedUntil.filter { held.contains($0.key) }
        let gained = held.subtracting(heldShards)
        let lost = heldShards.subtracting(held)
        guard !gained.isEmpty || !lost.isEmpty else { return }
        let removed = watched.chunks.flatMap { $0 }.filter { lost.contains(WatchShard.of(pubkey: $0, shards: settings.shards)) }
        await applyUsers(watched: [:], unwatched: removed)
        var added = 0
        try await forEachWatchedPage(inShards: gained) { page in
            // Pubkeys another instance (or an earlier run) already served live: what nobody
            // claimed for them arrived while the shard was unwatched, and is pushed rather than
            // taken for history. (Users' own relays are read as their pubkeys join them, in
            // `replan`.)
            // The page's own strings are kept, which the chunks share, not the query's copies.
            for url in settings.relays {
                let live = try await store.livePubkeys(Array(page.keys), relay: url)
                let wereLive = page.keys.filter(live.contains)
                livePubkeys[url, default: []].formUnion(wereLive)
                // Not those a failed read of this shard already subscribed: they may be live here now.
                noteTakeover(wereLive.filter { !watched.contains($0) }, on: url)
            }
            added += page.count
            await applyUsers(watched: page, unwatched: [], replanning: false)
        }
        heldShards = held
        metrics.watchState(pubkeys: watched.count, shards: heldShards.count)
        if planStale { await replan() }
        for shard in gained { takenShardsWatchedUntil[shard] = nil }
        logger.info(
            "watch shards changed",
            metadata: [
                "watch.gained": "\(gained.count)", "watch.lost": "\(lost.count)", "watch.held": "\(held.count)",
                "watch.pubkeys_read": "\(added)",
            ])
    }

    /// `pubkeys` were live on `url` under their shard's previous owner: until their first EOSE
    /// there, their chunk's REQ reaches back from when that owner stopped.
    private func noteTakeover(_ pubkeys: some Sequence<String>, on url: String) {
        guard !takenShardsWatchedUntil.isEmpty else { return }
        for pubkey in pubkeys {
            guard let until = takenShardsWatchedUntil[WatchShard.of(pubkey: pubkey, shards: settings.shards)] else { continue }
            takeoverFloors[url, default: [:]][pubkey] = until
        }
    }

    /// The shards with pubkeys taken over and not caught up on some relay, or not read in full
    /// yet: their `resume_from` stays for whoever takes them next.
    private func catchingUpShards() -> Set<Int> {
        var shards = Set(takenShardsWatchedUntil.keys)
        for floors in takeoverFloors.values {
            for pubkey in floors.keys { shards.insert(WatchShard.of(pubkey: pubkey, shards: settings.shards)) }
        }
        return shards
    }

    /// Re-reads every held shard and brings the watched set in line: what a lost notification
    /// left out is caught here.
    private func resync() async throws {
        // The pubkeys read, as 32-byte values in a sorted array: the page's strings go once the
        // page is applied, and kept they would hold as much again as the watched set itself (a
        // hash set of the values, twice the array at its load factor, and more while it grows).
        var read: [PubkeyBytes] = []
        read.reserveCapacity(watched.count + store.watchedUsersPageSize)
        var unreadable = Set<String>()
        try await forEachWatchedPage(inShards: heldShards) { page in
            for pubkey in page.keys {
                if let bytes = PubkeyBytes(hex: pubkey) { read.append(bytes) } else { unreadable.insert(pubkey) }
            }
            await applyUsers(watched: page, unwatched: [], replanning: false)
        }
        read.sort()
        let unwatched = watched.chunks.flatMap { $0 }.filter { pubkey in
            if let bytes = PubkeyBytes(hex: pubkey) { !read.containsSorted(bytes) } else { !unreadable.contains(pubkey) }
        }
        await applyUsers(watched: [:], unwatched: unwatched)
        forgetLive(unwatched)
    }

    /// Reads the watched users of `shards` a page at a time (`WatchStore.watchedUsersPageSize`),
    /// handing each page to `body` before the next is read.
    private func forEachWatchedPage(
        inShards shards: Set<Int>, _ body: ([String: RelayWatchPlan.UserRelays]) async throws -> Void
    ) async throws {
        var cursor: String?
        repeat {
            let page = try await store.watchedUsers(inShards: shards, after: cursor)
            try await body(page.users)
            cursor = page.next
        } while cursor != nil
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
        let users = try await store.watchedUsers(among: Array(mine))
        let unwatched = mine.filter { users[$0] == nil }
        await applyUsers(watched: users, unwatched: unwatched)
        // No longer watched at all: a later registration starts from history again.
        forgetLive(unwatched)
    }

    /// `users` are watched, with these relays; `unwatched` are not (any longer). Without
    /// `replanning`, a change to users' own relays waits for the caller's `replan` (one plan for
    /// a whole read rather than one per page).
    private func applyUsers(
        watched users: [String: RelayWatchPlan.UserRelays], unwatched: some Collection<String>, replanning: Bool = true
    ) async {
        for (pubkey, read) in users {
            var user = read
            // A list applied this run is at least as new as what the database said when it was
            // read: that read may have started before the list was stored.
            if inboxStamps[pubkey] != nil { user.inboxList = ownRelays[pubkey]?.inboxList ?? [] }
            if user.inboxList?.isEmpty == false || !user.registration.isEmpty {
                if ownRelays[pubkey] != user {
                    ownRelays[pubkey] = user
                    planStale = true
                }
            } else if ownRelays.removeValue(forKey: pubkey) != nil {
                planStale = true
            }
        }
        for pubkey in unwatched {
            if ownRelays.removeValue(forKey: pubkey) != nil { planStale = true }
            inboxStamps[pubkey] = nil
            for url in Array(takeoverFloors.keys) { takeoverFloors[url]?[pubkey] = nil }
        }
        let current = watched
        await apply(.defaults, inserted: users.keys.filter { !current.contains($0) }, removed: unwatched.filter(current.contains))
        if replanning, planStale { await replan() }
    }

    /// Brings the users' relay groups in line with a new plan: new relays are connected, changed
    /// ones re-issue the chunks that changed, relays no user's plan watches any more are closed.
    private func replan() async {
        planStale = false
        let next = RelayWatchPlan(
            users: ownRelays, defaults: settings.relays, maxRelays: settings.maxRelays, maxRelaysPerUser: settings.maxRelaysPerUser,
            policy: policy, served: Set(settings.ownInboxRelay.map { [$0] } ?? []))
        let before = plan.extraRelays
        plan = next
        for (url, old) in before where next.extraRelays[url] == nil {
            await dropGroup(.inbox(url))
            forgetLive(old, on: url)
        }
        for (url, pubkeys) in next.extraRelays.sorted(by: { $0.key < $1.key }) {
            let old = before[url] ?? []
            let inserted = pubkeys.subtracting(old)
            let removed = old.subtracting(pubkeys)
            if groups[.inbox(url)] == nil {
                groups[.inbox(url)] = WatchGroup(
                    scope: .inbox(url), chunkSize: settings.chunkSize, resubscribeInterval: .seconds(settings.resubscribeSeconds))
                openConnection(url)
            }
            if !inserted.isEmpty {
                // As for a gained shard: pubkeys already served live there before.
                do {
                    let live = try await store.livePubkeys(Array(inserted), relay: url)
                    let wereLive = inserted.filter(live.contains)
                    livePubkeys[url, default: []].formUnion(wereLive)
                    noteTakeover(wereLive, on: url)
                } catch {
                    logger.notice("could not read live pubkeys; their unseen wraps count as history", metadata: Self.errorMetadata(error))
                }
            }
            await apply(.inbox(url), inserted: inserted, removed: removed)
            forgetLive(removed, on: url)
            for pubkey in removed { takeoverFloors[url]?[pubkey] = nil }
        }
        if before.keys.sorted() != next.extraRelays.keys.sorted() {
            logger.info(
                "watched user relays changed",
                metadata: [
                    "watch.user_relays": "\(next.extraRelays.count)", "watch.over_limit": "\(next.overLimitRelays.count)",
                    "watch.users_with_relays": "\(ownRelays.count)",
                ])
        }
    }

    /// A user relay no plan watches any more: its subscriptions end and its connection closes,
    /// unless the operator listed it too (as an indexer).
    private func dropGroup(_ scope: WatchGroup.Scope) async {
        guard case .inbox(let url) = scope, let group = groups.removeValue(forKey: scope) else { return }
        if isConfigured(url) {
            for id in group.subscriptionIDs { await connections[url]?.unsubscribe(id: id) }
            livePubkeys[url] = nil
            takeoverFloors[url] = nil
            relayRefusals[url] = nil
        } else {
            closeConnection(url)
        }
    }

    /// A verified kind 10050 list from an indexer relay: stored and applied when it replaces the
    /// one known (newer, or as old with a lower id); the plan follows with the next round.
    private func noteInboxList(_ list: InboxRelayList, eventID: String) async {
        let pubkey = list.author.hex
        guard watched.contains(pubkey) else { return }
        if let stamp = inboxStamps[pubkey],
            !InboxRelayList.replaces(createdAt: list.createdAt, id: eventID, over: stamp.createdAt, stamp.id)
        {
            return
        }
        // Claimed before the write, so the same list from a second indexer is not written twice.
        inboxStamps[pubkey] = (list.createdAt, eventID)
        let stored: Bool
        do {
            stored = try await store.storeInboxList(list, eventID: eventID)
        } catch {
            logger.warning("could not store an inbox relay list", metadata: Self.errorMetadata(error))
            if inboxStamps[pubkey]?.id == eventID { inboxStamps[pubkey] = nil }
            return
        }
        // A newer list may have claimed the user meanwhile. Not stored: the database holds this
        // list or a newer one, which the user's relays were read with; the stamp stays, so the
        // same list is not written again with every REQ.
        guard stored, inboxStamps[pubkey]?.id == eventID, watched.contains(pubkey) else { return }
        var user = ownRelays[pubkey] ?? RelayWatchPlan.UserRelays()
        user.inboxList = list.relays
        if user.inboxList?.isEmpty != false, user.registration.isEmpty {
            ownRelays[pubkey] = nil
        } else {
            ownRelays[pubkey] = user
        }
        planStale = true
        logger.debug("inbox relay list applied", metadata: ["nostr.pubkey": "\(pubkey)", "watch.relays": "\(list.relays.count)"])
        wakeMaintainer.signal()
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

    /// The relays a group's REQs go to.
    private func relays(of scope: WatchGroup.Scope) -> [String] {
        switch scope {
        case .defaults: settings.relays
        case .inbox(let url): [url]
        }
    }

    private func apply(_ scope: WatchGroup.Scope, inserted: some Collection<String>, removed: some Collection<String>) async {
        guard !inserted.isEmpty || !removed.isEmpty, var group = groups[scope] else { return }
        let changed = group.chunks.apply(inserted: inserted, removed: removed)
        group.schedule.note(changed)
        groups[scope] = group
        for pubkey in removed {
            for relay in relays(of: scope) { livePubkeys[relay]?.remove(pubkey) }
        }
        await sendDueChunks()
        metrics.watchState(pubkeys: watched.count, shards: heldShards.count)
        logger.debug(
            "watched set changed",
            metadata: [
                "watch.group": "\(scope)", "watch.added": "\(inserted.count)", "watch.removed": "\(removed.count)",
                "watch.pubkeys": "\(group.chunks.count)",
            ])
    }

    /// Issues the changed chunks whose interval is over, in every group, and sets the wake-up for
    /// the next one.
    private func sendDueChunks() async {
        let now = ContinuousClock.now
        var next: ContinuousClock.Instant?
        for scope in Array(groups.keys) {
            guard var group = groups[scope] else { continue }
            let due = group.schedule.takeDue(at: now)
            groups[scope] = group
            for chunk in due where chunk < group.chunks.chunks.count { await resubscribe(scope, chunk) }
            if let due = groups[scope]?.schedule.nextDue(now: now) { next = min(next ?? due, due) }
        }
        guard let due = next, due != dueTimerAt else { return }
        dueTimer?.cancel()
        dueTimerAt = due
        let wake = wakeMaintainer
        dueTimer = Task {
            try? await Task.sleep(until: due)
            if !Task.isCancelled { wake.signal() }
        }
    }

    private func resubscribe(_ scope: WatchGroup.Scope, _ chunk: Int) async {
        guard var group = groups[scope] else { return }
        let previous = group.subscriptionID(chunk)
        let previousLists = group.subscriptionID(chunk, prefix: "i")
        // One counter for every group: a group dropped and made again never reuses an id, so a
        // late EOSE or CLOSED of an old REQ cannot pass for the new one's.
        generationCounter += 1
        let generation = generationCounter
        group.generations[chunk] = generation
        groups[scope] = group
        let id = "\(scope.prefix)\(chunk).\(generation)"
        let pubkeys = group.chunks.chunks[chunk].sorted()
        // The chunk's inbox lists (kind 10050) on the indexers: the newest list of each author,
        // then whatever each publishes next. On an indexer that is also one of `RELAYS` they ride
        // in the chunk's own REQ as a second filter, which saves the relay a subscription.
        // Made each time a REQ is sent, not kept: a parsed key holds a curve point beside its
        // bytes, and 100,000 of them kept for re-sends were the watcher's largest holding.
        let listsFilter: @Sendable () -> Filter = {
            Filter(authors: pubkeys.compactMap { try? PublicKey(hex: $0) }, kinds: [EventKind.inboxRelays])
        }
        let asksForLists = scope == .defaults && !pubkeys.isEmpty
        for url in relays(of: scope) {
            guard let connection = connections[url] else { continue }
            if let previous { await connection.unsubscribe(id: previous) }
            guard !pubkeys.isEmpty else { continue }
            let withLists = asksForLists && settings.indexerRelays.contains(url)
            // Boxed: cleared at the subscription's first EOSE, so a REQ re-sent after a later loss
            // reaches back from that loss, not the takeover.
            let watchedUntil = Locked(takeoverFloors[url].flatMap { floors in pubkeys.lazy.compactMap { floors[$0] }.min() })
            // A REQ re-sent after a lost connection reaches back over the time it was down, and
            // one for pubkeys taken over from another instance over the time nobody watched, so
            // wraps published meanwhile but dated back past `now − window` are not skipped.
            let stream = await connection.subscribe(id: id) { (context: SubscriptionRequestContext) in
                [
                    Filter(
                        kinds: [EventKind.giftWrap], tags: ["p": pubkeys],
                        since: Self.since(context, watchedUntil: watchedUntil.withLock { $0 }, now: UnixTime.now()))
                ] + (withLists ? [listsFilter()] : [])
            }
            let live = livePubkeys[url, default: []]
            let alreadyLive = SortedPubkeys(sorted: pubkeys.filter(live.contains))
            let key = "\(url) \(id)"
            let context = ConsumerContext(
                scope: scope, chunk: chunk, generation: generation, relay: url, connection: connection, subscriptionID: id,
                pubkeys: SortedPubkeys(sorted: pubkeys), alreadyLive: alreadyLive, carriesLists: withLists,
                takeoverFloor: watchedUntil)
            consumers[key] = Task { await self.consume(stream, context) }
        }
        guard scope == .defaults else { return }
        let listsID = "i\(chunk).\(generation)"
        for url in settings.indexerRelays where !settings.relays.contains(url) {
            guard let connection = connections[url] else { continue }
            if let previousLists { await connection.unsubscribe(id: previousLists) }
            guard asksForLists else { continue }
            let stream = await connection.subscribe(id: listsID) { [listsFilter()] }
            let key = "\(url) \(listsID)"
            let context = ConsumerContext(
                scope: scope, chunk: chunk, generation: generation, relay: url, connection: connection, subscriptionID: listsID,
                pubkeys: SortedPubkeys(sorted: pubkeys), alreadyLive: SortedPubkeys(sorted: []))
            consumers[key] = Task { await self.consumeLists(stream, context) }
        }
    }

    /// A gift-wrap REQ's `since`: the window before now, or before the moment from which wraps
    /// may have been missed (a lost connection's, `SubscriptionRequestContext`; or when the
    /// previous owner of a shard taken over stopped, less a minute for clocks that disagree). Never
    /// further back than seen wraps are kept, less an hour: a wrap seen and pushed before its row
    /// was pruned would come back as unseen, and be pushed again.
    package static func since(_ context: SubscriptionRequestContext, watchedUntil: Int64?, now: Int64) -> Int64 {
        let window = WatchSettings.windowSeconds
        let reach = min(context.since(window: window, now: now), (watchedUntil.map { $0 - 60 } ?? now) - window)
        return max(reach, now - WatchSettings.seenRetentionSeconds + 3_600)
    }

    struct ConsumerContext: Sendable {
        let scope: WatchGroup.Scope
        let chunk: Int
        let generation: Int
        let relay: String
        let connection: RelayConnection
        let subscriptionID: String
        let pubkeys: SortedPubkeys
        let alreadyLive: SortedPubkeys
        /// The REQ also asks for the pubkeys' kind 10050 lists.
        var carriesLists = false
        /// What the REQ's `since` reaches back from for pubkeys taken over, until its first EOSE.
        var takeoverFloor: Locked<Int64?>?
    }

    /// Reads one subscription until it is closed. Verification runs here, off the actor. Waiting
    /// for room in a full lane of `sightings` is what makes the connection stop reading the relay.
    private nonisolated func consume(_ stream: SubscriptionStream, _ context: ConsumerContext) async {
        var reachedEOSE = false
        // On a user's relay, ids this subscription already handed on are dropped before they cost
        // a statement each: such a relay could otherwise replay one valid wrap without end. (A
        // reconnect's replay repeats ids legitimately; they were claimed the first time.)
        let dropsRepeats = context.scope != .defaults
        var handedOn = Set<EventID>()
        // `lastEventAt` is for operators (the admin API), to the second: a lock and a dictionary
        // write per wrap would cost every wrap for a figure read a few times a minute.
        var lastNoted: ContinuousClock.Instant?
        // Users' relays share one label: their URLs come from users, and there may be hundreds.
        let counters = metrics.watchRelayCounters(relay: context.scope == .defaults ? context.relay : "user-relays")
        for await item in stream {
            switch item {
            case .event(let event) where context.carriesLists && event.kind == EventKind.inboxRelays:
                await readList(event, context)
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
                if dropsRepeats {
                    if handedOn.count >= 1_024 { handedOn.removeAll(keepingCapacity: true) }
                    guard handedOn.insert(event.id).inserted else { continue }
                }
                let phase: WrapSighting.Phase = reachedEOSE ? .realtime : context.alreadyLive.contains(recipient) ? .resumed : .history
                let receivedAt = ContinuousClock.now
                guard
                    await sightings.send(
                        WrapSighting(
                            wrapID: event.id.hex, recipient: recipient, relay: context.relay, phase: phase, receivedAt: receivedAt),
                        lane: context.scope == .defaults ? 0 : 1)
                else { continue }
                if lastNoted.map({ receivedAt - $0 >= .seconds(1) }) ?? true {
                    lastNoted = receivedAt
                    lastEventAt.withLock { $0[context.relay] = Date() }
                }
            case .endOfStoredEvents:
                if !reachedEOSE {
                    reachedEOSE = true
                    context.takeoverFloor?.withLock { $0 = nil }
                    await markLive(context)
                }
            case .closed(let text):
                // The connection logged the relay's text (escaped, throttled); it is not repeated here.
                await chunkClosed(context, reason: RelayMessage.prefix(of: text))
            }
        }
        await consumerEnded("\(context.relay) \(context.subscriptionID)")
    }

    /// Reads one chunk's kind 10050 subscription on an indexer relay until it is closed.
    private nonisolated func consumeLists(_ stream: SubscriptionStream, _ context: ConsumerContext) async {
        for await item in stream {
            switch item {
            case .event(let event): await readList(event, context)
            case .endOfStoredEvents: break
            // The chunk is issued again after the backoff, its list lookup with it.
            case .closed(let text): await chunkClosed(context, reason: RelayMessage.prefix(of: text), listsOnly: true)
            }
        }
        await consumerEnded("\(context.relay) \(context.subscriptionID)")
    }

    /// A kind 10050 event an indexer sent for the chunk: by one of its pubkeys and signed, or the
    /// relay is counted for sending junk.
    private nonisolated func readList(_ event: NostrEvent, _ context: ConsumerContext) async {
        guard event.kind == EventKind.inboxRelays, context.pubkeys.contains(event.pubkey.hex), (try? event.verify()) != nil else {
            context.connection.countInvalid()
            return
        }
        guard let list = InboxRelayList(event) else { return }
        await noteInboxList(list, eventID: event.id.hex)
    }

    /// A relay refused or ended a chunk's subscription (rate limit, too many subscriptions,
    /// AUTH): the chunk is issued again after 5 s, doubling up to 5 minutes while it keeps
    /// happening. `auth-required:` (after the gateway's own AUTH) and `restricted:` also mark the
    /// relay as not watchable, until one of its REQs reaches EOSE.
    private func chunkClosed(_ context: ConsumerContext, reason: MachineReadablePrefix?, listsOnly: Bool = false) {
        guard var group = groups[context.scope], group.generations[context.chunk] == context.generation,
            connections[context.relay] === context.connection
        else { return }
        let closures = (group.closedChunks[context.chunk]?.closures ?? 0) + 1
        let delay = WatchGroup.ClosedChunk.retryDelay(afterClosures: closures, reason: reason)
        group.closedChunks[context.chunk] = WatchGroup.ClosedChunk(closures: closures, retryAt: .now + delay)
        groups[context.scope] = group
        // What a relay says of the inbox lists says nothing of whether it serves gift wraps.
        guard !listsOnly else { return }
        switch reason {
        case .authRequired?: relayRefusals[context.relay] = .authRequired
        case .restricted?: relayRefusals[context.relay] = .refused
        default: break
        }
        metrics.watchSubscriptionClosed()
    }

    /// Closed chunks whose retry is due join their group's schedule, so a retry never makes a
    /// chunk's REQ go out more often than any other change would.
    private func reissueClosedChunks() {
        let now = ContinuousClock.now
        for scope in Array(groups.keys) {
            guard var group = groups[scope] else { continue }
            let due = group.closedChunks.filter { $0.value.retryAt.map { $0 <= now } ?? false }.map(\.key)
            for chunk in due where chunk < group.chunks.chunks.count {
                group.closedChunks[chunk]?.retryAt = nil
                group.schedule.note([chunk])
            }
            groups[scope] = group
        }
    }

    /// The chunk's subscription reached EOSE on the relay: its pubkeys are live there. The
    /// database learns it from `liveWriteLoop`, so the consumer goes on with the events after EOSE
    /// at once.
    private func markLive(_ context: ConsumerContext) {
        guard var group = groups[context.scope], connections[context.relay] === context.connection else { return }
        if let closed = group.closedChunks[context.chunk], closed.retryAt == nil { group.closedChunks[context.chunk] = nil }
        groups[context.scope] = group
        relayRefusals[context.relay] = nil
        let live = context.pubkeys.filter(group.chunks.contains)
        livePubkeys[context.relay, default: []].formUnion(live)
        // Caught up here: a REQ re-sent later reaches back from its own loss, not the takeover.
        // Removed in place: a copy of the relay's floors (every pubkey taken over) per EOSE would
        // cost the square of a takeover.
        if takeoverFloors[context.relay] != nil {
            for pubkey in live { takeoverFloors[context.relay]?.removeValue(forKey: pubkey) }
            if takeoverFloors[context.relay]?.isEmpty == true { takeoverFloors[context.relay] = nil }
        }
        if !live.isEmpty { liveWrites.add(.mark(relay: context.relay, pubkeys: Array(live))) }
    }

    /// `pubkeys` are no longer watched: queued behind any mark still waiting for them. Callers
    /// queue it after `apply` took the pubkeys out of the groups: `markLive` only marks pubkeys in
    /// a group, so no mark for them can be queued behind it (until a later read of the database
    /// adds them back, watched again).
    private func forgetLive(_ pubkeys: some Collection<String>) {
        if !pubkeys.isEmpty { liveWrites.add(.forget(Array(pubkeys))) }
    }

    /// `pubkeys` left `url`'s group. Those this instance still watches dropped the relay from
    /// their list, and are forgotten there, so a later list naming it again starts from history.
    /// The others were unregistered (forgotten everywhere by the caller) or moved with their shard
    /// to another instance, which needs their marks to push what arrives meanwhile.
    private func forgetLive(_ pubkeys: Set<String>, on url: String) {
        let dropped = pubkeys.filter(watched.contains)
        if !dropped.isEmpty { liveWrites.add(.forgetOn(relay: url, pubkeys: Array(dropped))) }
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
                        case .forgetOn(let relay, let pubkeys): try await store.forgetLive(pubkeys, relay: relay)
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

    // MARK: Recording

    /// Records the sightings, a batch (up to `batchSize`) per statement, one statement at a time
    /// (see `sightings`). One writer's ceiling is a full batch per statement: at ~50 µs of
    /// PostgreSQL CPU a wrap, about 20,000 wraps/s, more than the benchmark machine's two cores
    /// verify and send (offered 20,000/s, it delivered ~11,400/s with one writer or two).
    /// Instances share the watched pubkeys (shards), so each instance adds a writer.
    private nonisolated func ingestLoop() async {
        let relayToQueue = metrics.watchRelayToQueueTimer()
        let recorder = SightingRecorder(store: store, metrics: metrics, wakeup: wakeup, directDelivery: directDelivery)
        // Returning early (cancelled) must not leave consumers waiting for room that never comes.
        defer { sightings.close() }
        // Shutting down without a database: once one batch is given up, the rest are dropped
        // without trying, or each would hold the shutdown up for its own retries.
        var givenUp = 0
        while let batch = await sightings.next(max: batchSize) {
            if givenUp > 0 {
                givenUp += batch.count
                continue
            }
            var attempt = 0
            while true {
                attempt += 1
                do {
                    let result = try await recorder.record(batch)
                    let now = ContinuousClock.now
                    for sighting in batch where sighting.live {
                        relayToQueue.recordNanoseconds(Self.nanoseconds(now - sighting.receivedAt))
                    }
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
        /// `RELAYS`, each in detail.
        public var relays: [WatchedRelay]
        public var shards: [Int]
        public var watchedPubkeys: Int
        public var pendingSightings: Int
        /// Users' own relays by state (`watching`, `auth-required`, `refused`, `unreachable`,
        /// `over-limit`).
        public var userRelays: [String: Int]
        /// Held users whose relays go beyond `RELAYS`.
        public var usersWithOwnRelays: Int

        package init(
            relays: [WatchedRelay], shards: [Int], watchedPubkeys: Int, pendingSightings: Int, userRelays: [String: Int] = [:],
            usersWithOwnRelays: Int = 0
        ) {
            self.relays = relays
            self.shards = shards
            self.watchedPubkeys = watchedPubkeys
            self.pendingSightings = pendingSightings
            self.userRelays = userRelays
            self.usersWithOwnRelays = usersWithOwnRelays
        }
    }

    /// Users' relays (not `RELAYS`) by state.
    private func userRelayCounts() -> [String: Int] {
        var counts: [String: Int] = [:]
        for state in [RelayWatchPlan.RelayState.watching, .authRequired, .refused, .unreachable, .overLimit] {
            counts[state.rawValue] = 0
        }
        for (url, state) in relayStates() where !settings.relays.contains(url) { counts[state.rawValue, default: 0] += 1 }
        return counts
    }

    /// Per-relay gauges and counters from each connection's statistics, at scrape time: the
    /// connections live in `NostrRelay`, which knows nothing of metrics. Users' relays are
    /// counted by state, not labelled one by one.
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
                relay: url, pausedSeconds: paused.inSeconds,
                resubscribed: now.resubscribedAfterPause - before.resubscribedAfterPause,
                suppressedLogLines: now.suppressedLogLines - before.suppressedLogLines)
        }
        metrics.watchUserRelays(userRelayCounts(), users: ownRelays.count)
        metrics.watchPendingWraps(sightings.count)
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
            relays: relays, shards: heldShards.sorted(), watchedPubkeys: watched.count,
            pendingSightings: sightings.count, userRelays: userRelayCounts(), usersWithOwnRelays: ownRelays.count)
    }
}
