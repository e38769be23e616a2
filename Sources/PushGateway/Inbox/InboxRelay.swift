import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NostrProtocol
import PostgresNIO
public import ServiceLifecycle

/// The gateway as a NIP-17 inbox relay (`INBOX_RELAY=1`): a NIP-01 relay at `/relay` on its own
/// listener that accepts gift wraps to registered recipients, keeps them for
/// `INBOX_RETENTION_DAYS`, pushes each recipient's relay-watch devices once per wrap (through the
/// watcher's pipeline: the same claim, coalescing and budget), and serves the wraps only to their
/// recipient after NIP-42 AUTH. NIP-11 answers at the same URL.
///
/// - Live delivery crosses instances: storing a wrap NOTIFYs `linkstr_inbox`, and every instance
///   forwards it to its own connections authenticated as the recipient.
/// - Limits: connections per client address, subscriptions per connection, EVENTs per second per
///   connection, message size; a client that stops reading is disconnected.
public struct InboxRelay: Service {
    let settings: InboxRelaySettings
    let store: InboxStore
    /// Claims a stored wrap and queues its pushes, as the relay watcher does.
    let recorder: SightingRecorder
    let subscribers = InboxSubscribers()
    let metrics: GatewayMetrics
    let logger: Logger
    let perAddress: ConnectionsPerAddress
    /// `RATE_LIMIT_TRUST_FORWARDED`: the client is the proxy's last `X-Forwarded-For` entry.
    let trustForwardedFor: Bool
    /// EVENTs per client address across its connections: twice one connection's rate.
    let eventsPerAddress: RateLimiter
    /// Open connections and subscriptions on this instance, for `/admin/status` and the gauges.
    let counts = Locked(Counts())
    /// Accepted-looking wraps from every connection, stored a batch per statement by the store
    /// loop. A connection hands its wraps over without waiting for them to be stored (it
    /// answers each OK when its batch is), so one connection's wraps share batches too. When
    /// `storeQueueLimit` wait, connections stop reading until a batch is taken.
    let pendingWraps = Batcher<PendingWrap>(limit: InboxRelay.storeQueueLimit)

    /// A wrap waiting to be stored, and what to do with its outcome (nil: it could not be stored).
    struct PendingWrap: Sendable {
        let event: NostrEvent
        let recipient: String
        let answer: @Sendable (InboxStore.StoreOutcome?) -> Void
    }

    static let storeQueueLimit = 10_000
    static let storeBatchSize = 256

    public struct Counts: Sendable, Equatable {
        public var connections = 0
        public var subscriptions = 0
    }

    public var status: Counts { counts.withLock { $0 } }

    func count(connections change: Int = 0, subscriptions subscriptionChange: Int = 0) {
        let now = counts.withLock { counts in
            counts.connections += change
            counts.subscriptions += subscriptionChange
            return counts
        }
        metrics.inboxOpen(connections: now.connections, subscriptions: now.subscriptions)
    }

    init(
        settings: InboxRelaySettings, client: PostgresClient, watch: WatchSettings, deviceBudget: PushBudget?, metrics: GatewayMetrics,
        logger: Logger, wakeup: WakeupSignal?, directDelivery: DirectDelivery?, trustForwardedFor: Bool = false
    ) {
        self.settings = settings
        self.trustForwardedFor = trustForwardedFor
        var logger = logger
        logger[metadataKey: "inbox"] = "relay"
        self.logger = logger
        self.store = InboxStore(database: Database(client), logger: logger)
        self.recorder = SightingRecorder(
            store: WatchStore(client: client, settings: watch, deviceBudget: deviceBudget, logger: logger), metrics: metrics,
            wakeup: wakeup, directDelivery: directDelivery)
        self.metrics = metrics
        self.perAddress = ConnectionsPerAddress(limit: settings.maxConnectionsPerAddress)
        self.eventsPerAddress = RateLimiter(
            limit: .init(perSecond: Double(settings.eventsPerSecond * 2), burst: Double(settings.eventsPerSecond * 4)))
    }

    public func run() async throws {
        let app = application()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.run() }
            group.addTask { await cancelWhenGracefulShutdown { await self.listenLoop() } }
            group.addTask { await cancelWhenGracefulShutdown { await self.pruneLoop() } }
            // One store loop, one statement at a time: the next batch gathers while one is
            // written, and so carries everything that arrived meanwhile (a statement has a fixed
            // cost besides its cost a wrap), and two statements never coalesce for one device at
            // once (each would see no pending job and queue one). Not cancelled: a closed batcher
            // ends it once what was handed over is stored and answered.
            group.addTask {
                await withGracefulShutdownHandler {
                    await self.storeLoop()
                } onGracefulShutdown: {
                    self.pendingWraps.close()
                }
            }
            try await group.next()
            pendingWraps.close()
            group.cancelAll()
        }
    }

    // MARK: Listener

    private func application() -> some ApplicationProtocol {
        let router = Router()
        let relayURL = settings.relayURL?.description ?? ""
        router.get("/relay") { request, _ -> Response in
            guard request.headers[.accept]?.contains("application/nostr+json") == true else {
                return Response(
                    status: .ok, headers: [.contentType: "text/plain; charset=utf-8"],
                    body: .init(byteBuffer: ByteBuffer(string: "This is a Nostr relay: connect with a Nostr client to \(relayURL)\n")))
            }
            return Response(
                status: .ok, headers: [.contentType: "application/nostr+json", .accessControlAllowOrigin: "*"],
                body: .init(byteBuffer: ByteBuffer(string: Self.information(settings).serialized)))
        }
        let relay = self
        return Application(
            router: router,
            server: .http1WebSocketUpgrade(
                configuration: .init(ws: .init(maxFrameSize: InboxRelaySettings.maxMessageBytes))
            ) { request, channel, _ in
                guard request.path == "/relay" else { return .dontUpgrade }
                let address = relay.clientAddress(request, peer: channel.remoteAddress?.ipAddress)
                return .upgrade([:]) { inbound, outbound, _ in
                    try await relay.serve(inbound: inbound, outbound: outbound, address: address)
                }
            },
            configuration: .init(address: .hostname(settings.listenHost, port: settings.listenPort), serverName: "linkstr-push-inbox"),
            logger: logger)
    }

    /// The client's address key, read as the API reads it (`ClientAddress.key`).
    func clientAddress(_ request: HTTPRequest, peer: String?) -> String {
        ClientAddress.key(
            peer: peer, forwardedFor: request.headerFields[values: HTTPField.Name("X-Forwarded-For")!],
            trustForwardedFor: trustForwardedFor)
    }

    private func serve(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, address: String) async throws {
        guard perAddress.admit(address) else {
            metrics.inboxConnectionRefused()
            try await outbound.writeTextMessage(RelayMessage.notice("rate-limited: too many connections from your address").json)
            return
        }
        defer { perAddress.release(address) }
        count(connections: 1)
        defer { count(connections: -1) }
        let session = InboxRelaySession(relay: self, address: address)
        do {
            try await session.serve(inbound: inbound, writer: outbound)
        } catch {
            logger.debug("inbox connection ended", metadata: ["error.type": "\(type(of: error))"])
        }
    }

    /// NIP-11: what the relay is and what it accepts.
    static func information(_ settings: InboxRelaySettings) -> JSONValue {
        .object([
            "name": "linkstr-push inbox",
            "description": .string(
                "A NIP-17 inbox: gift wraps (kind 1059) to registered recipients, served only to their recipient after NIP-42 AUTH."),
            "supported_nips": .array([1, 11, 17, 42, 59, 62].map { .integer($0) }),
            "software": "https://github.com/linkstr/linkstr-push",
            "limitation": .object([
                "max_message_length": .integer(Int64(InboxRelaySettings.maxMessageBytes)),
                "max_subscriptions": .integer(Int64(settings.maxSubscriptions)),
                "max_limit": .integer(Int64(InboxRelaySettings.maxLimit)),
                "auth_required": .bool(false), "restricted_writes": .bool(true),
                "created_at_lower_limit": .integer(InboxRelaySettings.maxAgeSeconds),
                "created_at_upper_limit": .integer(InboxRelaySettings.maxFutureSeconds),
            ]),
            "retention": .array([.object(["kinds": .array([.integer(1059)]), "time": .integer(Int64(settings.retentionDays) * 86_400)])]),
        ])
    }

    // MARK: Storing and pushing

    /// Stores the handed-over wraps a batch at a time, queueing the pushes for the newly stored
    /// ones in the same statement, and answers each. The pushes are recorded as the relay
    /// watcher's live sightings, so a copy the watcher sees on another relay is pushed once in all.
    private func storeLoop() async {
        let relay = settings.relayURL?.description ?? "inbox"
        while let batch = await pendingWraps.next(max: Self.storeBatchSize) {
            let outcomes: [InboxStore.StoreOutcome]?
            do {
                let stored = try await store.store(batch.map { ($0.event, $0.recipient) }, pushing: recorder.pushing(from: relay))
                outcomes = stored.outcomes
                let newlyStored = Set(zip(batch, stored.outcomes).filter { $0.1 == .stored }.map(\.0.event.id))
                recorder.handOn(stored.record, distinctWraps: newlyStored.count)
            } catch {
                logger.warning(
                    "could not store inbox wraps", metadata: ["error.type": "\(type(of: error))", "inbox.wraps": "\(batch.count)"])
                outcomes = nil
            }
            for (index, wrap) in batch.enumerated() { wrap.answer(outcomes?[index]) }
        }
    }

    // MARK: Live delivery and retention

    /// Forwards every stored wrap (NOTIFY from any instance) to this instance's connections
    /// authenticated as its recipient.
    private func listenLoop() async {
        // When the last LISTEN connection was lost. What was stored from then until the next one
        // listens was announced to no one here: it is sent to the live subscribers once the next
        // one listens. The margin covers a database clock a little behind this one's; a wrap a
        // subscriber already had arrives twice, which a Nostr client ignores.
        var lostAt: Date?
        while !Task.isCancelled {
            do {
                try await store.database.withConnection { connection in
                    try await connection.underlying.listen(on: InboxStore.channel) { notifications in
                        if let since = lostAt {
                            lostAt = nil
                            await self.replay(storedSince: since.addingTimeInterval(-Self.replayMarginSeconds))
                        }
                        for try await notification in notifications { await self.forward(notification.payload) }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                lostAt = lostAt ?? Date()
                logger.notice("inbox LISTEN connection lost; reconnecting", metadata: ["error.type": "\(type(of: error))"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    static let replayMarginSeconds: TimeInterval = 5
    /// Wraps one replay sends at most; a subscriber that missed more reads them with its next REQ.
    static let replayLimit = 10_000

    /// Sends the wraps stored since `since` to this instance's live subscribers of their recipient.
    private func replay(storedSince since: Date) async {
        let recipients = subscribers.recipients()
        guard !recipients.isEmpty else { return }
        do {
            let wraps = try await store.stored(for: recipients, since: since, limit: Self.replayLimit)
            for wrap in wraps {
                for deliver in subscribers.connections(of: wrap.recipient) { deliver(wrap.recipient, wrap.id, wrap.createdAt, wrap.event) }
            }
            logger.info("inbox wraps stored while LISTEN was down sent to live subscribers", metadata: ["inbox.replayed": "\(wraps.count)"])
        } catch {
            logger.warning("could not replay the inbox wraps stored while LISTEN was down", metadata: RelayWatcher.errorMetadata(error))
        }
    }

    /// A notification: a line "<recipient> <id>" per wrap stored.
    private func forward(_ payload: String) async {
        // Most recipients are offline: a notification nobody here can read is not parsed at all.
        guard !subscribers.isEmpty else { return }
        for line in payload.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            let connections = subscribers.connections(of: parts[0])
            guard !connections.isEmpty else { continue }
            guard let wrap = try? await store.wrap(id: parts[1]) else { continue }
            for deliver in connections { deliver(parts[0], parts[1], wrap.createdAt, wrap.event) }
        }
    }

    private func pruneLoop() async {
        while !Task.isCancelled {
            do {
                let removed = try await store.prune(retentionDays: settings.retentionDays)
                if removed > 0 { logger.info("inbox wraps pruned", metadata: ["inbox.wraps": "\(removed)"]) }
            } catch {
                logger.warning("inbox prune failed", metadata: ["error.type": "\(type(of: error))"])
            }
            try? await Task.sleep(for: .seconds(60))
        }
    }
}
