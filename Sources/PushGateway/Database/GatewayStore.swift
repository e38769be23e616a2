public import Foundation
public import GatewayWire
public import Logging
public import NostrProtocol
public import PostgresNIO

/// A registered device as the API shows it to its owner.
public struct DeviceRecord: Sendable, Equatable {
    /// The token, or the endpoint.
    public var deviceToken: String
    public var platform: String
    /// APNs only.
    public var environment: String?
    /// APNs: `alert` or `voip`.
    public var pushType: String
    public var topic: String
    public var relayWatch: Bool
    /// The relays the registration named, in their normal form.
    public var relays: [String]
    public var registeredAt: Date
}

/// `GET /v1/devices`' rows: the caller's devices and the relay watcher's view of the caller.
public struct DeviceListing: Sendable, Equatable {
    public var devices: [DeviceRecord] = []
    /// The relays of the caller's stored kind 10050 list, if the watcher found one.
    public var inboxList: [String]?
    /// URL → state, as the watching instance last reported its relays.
    public var relayStates: [String: String] = [:]
}

/// All SQL of the HTTP API. Every mutating call runs in one transaction that first consumes the
/// request's single-use authorization key, so a replayed request changes nothing and a failed
/// one leaves the key unused.
public struct GatewayStore: Sendable {
    public let database: Database
    public let logger: Logger
    /// How far `created_at` may be from now (`AUTH_MAX_SKEW_SECONDS`): replay keys are kept
    /// until an event could no longer pass that check.
    public let replayWindowSeconds: Int64
    /// How long dedupe rows are kept.
    public static let dedupeRetention: TimeInterval = 30 * 86_400
    /// How long a queued job may wait for delivery.
    public static let jobLifetimeSeconds = 15 * 60

    /// Group commit for `register` (see `RegistrationBatcher`).
    let registrations: RegistrationBatcher

    /// `MAX_DEVICES_PER_PUBKEY`: registering one more evicts the least recently registered.
    public let maxDevicesPerPubkey: Int
    public static let defaultMaxDevicesPerPubkey = 10
    /// `PUSH_DEVICE_BUDGET`; nil: none.
    public let deviceBudget: PushBudget?

    /// `registrationClient`: where registrations are written (`GatewayApplication.registrationClient`);
    /// nil: on `client`.
    public init(
        client: PostgresClient, registrationClient: PostgresClient? = nil, logger: Logger, replayWindowSeconds: Int64 = 300,
        maxDevicesPerPubkey: Int = defaultMaxDevicesPerPubkey, deviceBudget: PushBudget? = .default
    ) {
        self.database = Database(client)
        let registrationDatabase = registrationClient.map(Database.init) ?? self.database
        self.logger = logger
        self.replayWindowSeconds = replayWindowSeconds
        self.maxDevicesPerPubkey = maxDevicesPerPubkey
        self.deviceBudget = deviceBudget
        self.registrations = RegistrationBatcher { group in
            try await Self.storage(logger: logger) {
                try await Self.applyRegistrations(
                    group, maxDevicesPerPubkey: maxDevicesPerPubkey, database: registrationDatabase, logger: logger)
            }
        }
    }

    /// Runs `body` in a transaction after recording `auth`'s replay key; a key seen before is a 401.
    func authorized<Result: Sendable>(
        _ auth: VerifiedHTTPAuth, _ body: @escaping @Sendable (DatabaseConnection) async throws -> Result
    ) async throws -> Result {
        let pubkey = auth.pubkey.hex
        let key = auth.replayKey
        let expires = Date(timeIntervalSince1970: TimeInterval(auth.event.createdAt + replayWindowSeconds + 60))
        return try await storage {
            // A device deleted by a concurrent request between our read and our insert (23503),
            // or two pushes locking dedupe rows in opposite orders (40P01), rolls the whole
            // transaction back, replay key included, so running it again is safe.
            var attempt = 0
            while true {
                attempt += 1
                do {
                    return try await database.withTransaction(logger: logger) { connection in
                        let inserted = try await connection.query(
                            """
                            INSERT INTO auth_replays (pubkey, replay_key, expires_at) VALUES (\(pubkey), \(key), \(expires))
                            ON CONFLICT DO NOTHING RETURNING 1
                            """, logger: logger
                        ).count
                        guard inserted == 1 else { throw APIError.replayed }
                        return try await body(connection)
                    }
                } catch let error as PSQLError where attempt < 3 && Self.isTransient(error) {
                    continue
                }
            }
        }
    }

    /// The replay key of `auth` and when it may be forgotten.
    func replayKey(_ auth: VerifiedHTTPAuth) -> (key: String, expires: Date) {
        (auth.replayKey, Date(timeIntervalSince1970: TimeInterval(auth.event.createdAt + replayWindowSeconds + 60)))
    }

    /// Runs `body` (one statement, its own transaction) up to three times while PostgreSQL rolls
    /// it back for a transient reason (`isTransient`): the whole statement was undone, replay keys
    /// and claims included, so running it again is safe.
    static func retryingTransient<Result>(_ body: () async throws -> Result) async throws -> Result {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await body()
            } catch let error as PSQLError where attempt < 3 && isTransient(error) {
                continue
            }
        }
    }

    static let storageTimeout: Duration = .seconds(5)

    static func isTransient(_ error: PSQLError) -> Bool {
        guard let state = error.serverInfo?[.sqlState] else { return false }
        return ["23503", "40P01", "40001"].contains(state)
    }

    /// Maps anything that is not already an API error to a plain 500, logging only the error type
    /// and PostgreSQL's SQLSTATE code, never values.
    ///
    /// An operation that takes longer than `storageTimeout` (the database unreachable: the pool
    /// waits for a connection that cannot be made) is cancelled and answered 500 in good time,
    /// instead of holding the client until its own timeout.
    func storage<Result: Sendable>(_ body: @escaping @Sendable () async throws -> Result) async throws -> Result {
        try await Self.storage(logger: logger, body)
    }

    static func storage<Result: Sendable>(logger: Logger, _ body: @escaping @Sendable () async throws -> Result) async throws -> Result {
        do {
            return try await withDeadline(Self.storageTimeout, body)
        } catch let error as APIError {
            throw error
        } catch let error as PSQLError {
            Self.logStorageFailure(error, logger)
            throw APIError.storage
        } catch {
            logger.error("storage failure", metadata: ["error.type": "\(type(of: error))"])
            throw APIError.storage
        }
    }

    /// Registers (or moves) a device to `pubkey`. A token moving away from another pubkey drops
    /// that pubkey's queued jobs for it, and that pubkey's archive state if it has no device left.
    public func register(_ request: RegisterDeviceRequest, topic: String, auth: VerifiedHTTPAuth) async throws {
        let pubkey = auth.pubkey.hex
        let (key, expires) = replayKey(auth)
        let applied = try await registrations.register(
            PendingRegistration(
                registering: request.destination, pubkey: pubkey, replayKey: key, replayExpires: expires, topic: topic,
                relayWatch: request.relayWatch, relays: request.relays.map(\.description)))
        guard applied else { throw APIError.replayed }
    }

    /// Writes a group of registrations in one statement. A group PostgreSQL refuses as a whole is
    /// written again one registration at a time, so one bad registration fails only itself.
    package static func applyRegistrations(
        _ group: [PendingRegistration], maxDevicesPerPubkey: Int, database: Database, logger: Logger
    ) async throws -> [RegistrationBatcher.Outcome] {
        @Sendable func write(_ registrations: [PendingRegistration]) async throws -> [Bool] {
            let (applied, crowded) = try await retryingTransient {
                var applied = [Bool](repeating: false, count: registrations.count)
                var devicesAfter: [String: Int] = [:]
                for (position, wasApplied, devicesBefore) in try await database.execute(
                    RegisterDevicesStatement(registrations: registrations), logger: logger)
                {
                    applied[position - 1] = wasApplied
                    let pubkey = registrations[position - 1].pubkey
                    devicesAfter[pubkey] = (devicesAfter[pubkey] ?? devicesBefore) + (wasApplied ? 1 : 0)
                }
                // At most one new device per applied registration: only a pubkey that may have
                // passed the cap is looked at again.
                return (applied, devicesAfter.filter { $0.value > maxDevicesPerPubkey }.keys.sorted())
            }
            // Committed: the answers stand whatever happens next. Eviction is its own statement,
            // outside the retries above (running the registration again would find its replay keys
            // used and answer a stored registration as replayed); if it fails, the pubkey's next
            // registration evicts.
            if !crowded.isEmpty {
                do {
                    let evicted = try await database.execute(
                        EvictExcessDevicesStatement(pubkeys: crowded, maxDevicesPerPubkey: maxDevicesPerPubkey), logger: logger)
                    if !evicted.isEmpty {
                        logger.info(
                            "evicted least recently registered devices",
                            metadata: ["push.devices": "\(evicted.count)", "push.pubkeys": "\(Set(evicted).count)"])
                    }
                } catch {
                    logger.warning(
                        "could not evict devices past the cap",
                        metadata: ["error.type": "\(type(of: error))", "push.pubkeys": "\(crowded.count)"])
                }
            }
            return applied
        }
        func refused(_ error: PSQLError) -> RegistrationBatcher.Outcome {
            logStorageFailure(error, logger)
            return .failure(APIError.storage)
        }
        do {
            return try await write(group).map { .success($0) }
        } catch let error as PSQLError where error.serverInfo != nil {
            // PostgreSQL refused the statement (it is reachable): an outcome, not a thrown
            // failure, so the batcher does not fail the registrations queued behind this group.
            guard group.count > 1 else { return [refused(error)] }
            var outcomes: [RegistrationBatcher.Outcome] = []
            for registration in group {
                do {
                    outcomes.append(.success(try await write([registration])[0]))
                } catch let error as PSQLError {
                    outcomes.append(refused(error))
                }
            }
            return outcomes
        }
    }

    /// Removes the caller's own device (a token owned by someone else is left alone).
    @discardableResult
    public func unregister(deviceToken: String, auth: VerifiedHTTPAuth) async throws -> Bool {
        let pubkey = auth.pubkey.hex
        let logger = self.logger
        return try await authorized(auth) { connection in
            let removed = try await connection.query(
                "DELETE FROM devices WHERE device_token = \(deviceToken) AND pubkey = \(pubkey) RETURNING 1", logger: logger
            ).count
            try await Self.dropOrphanedArchive(pubkey, connection, logger)
            return removed > 0
        }
    }

    /// Applies an archive update; returns false when nothing was stored because the caller has no
    /// device. Archiving cancels queued pushes for those conversations: the caller's jobs, and its
    /// devices in queued batches.
    @discardableResult
    public func updateArchive(_ request: ArchiveStateRequest, auth: VerifiedHTTPAuth) async throws -> Bool {
        let pubkey = auth.pubkey.hex
        let logger = self.logger
        return try await authorized(auth) { connection in
            let hasDevice =
                try await connection.query("SELECT 1 FROM devices WHERE pubkey = \(pubkey) LIMIT 1 FOR SHARE", logger: logger).count > 0
            guard hasDevice else { return false }
            if let known = request.known {
                guard !known.isEmpty else { return true }
                try await connection.query(
                    "DELETE FROM archived_conversations WHERE pubkey = \(pubkey) AND conversation_id = ANY(\(known))", logger: logger)
            } else {
                try await connection.query("DELETE FROM archived_conversations WHERE pubkey = \(pubkey)", logger: logger)
            }
            if !request.archived.isEmpty {
                try await connection.query(
                    """
                    INSERT INTO archived_conversations (pubkey, conversation_id)
                    SELECT \(pubkey), unnest(\(request.archived)::text[]) ON CONFLICT DO NOTHING
                    """, logger: logger)
                try await connection.query(ArchivedJobsDeletion(pubkey: pubkey, conversationIDs: request.archived).query, logger: logger)
                try await BatchMembersRemoval(pubkey: pubkey, conversationIDs: request.archived).run(on: connection, logger: logger)
            }
            return true
        }
    }

    public struct EnqueueResult: Sendable, Equatable {
        public var recipientCount: Int
        public var candidateDevices: Int
        /// Devices whose budget was spent: their push was dropped, never queued.
        public var overBudget: Int = 0
        /// The jobs queued already leased, for the caller to send (only with a `leaseSeconds`).
        public var leased: [ClaimedJob] = []
    }

    /// Dedupes per (event, type, recipient), skips the sender, recipients without devices and
    /// archived conversations, and queues one batch of the remaining devices, all in one statement.
    /// `skipRelayWatchDevices`: while the relay watcher runs, devices it serves get no typed push.
    /// With `leaseSeconds`, the batch is queued already claimed by this instance and its members returned.
    public func enqueue(
        _ request: PushRequest, auth: VerifiedHTTPAuth, skipRelayWatchDevices: Bool = false,
        leaseSeconds: Int? = nil
    ) async throws -> EnqueueResult {
        let (key, expires) = replayKey(auth)
        let statement = EnqueuePushStatement(
            sender: auth.pubkey.hex, replayKey: key, replayExpires: expires, recipients: request.recipients, eventID: request.eventID,
            notificationType: request.type, conversationID: request.conversationID, emoji: request.emoji, postID: request.postID,
            lifetimeSeconds: Self.jobLifetimeSeconds, skipRelayWatchDevices: skipRelayWatchDevices, leaseSeconds: leaseSeconds,
            budget: deviceBudget, background: request.background)
        let rows = try await storage {
            try await Self.retryingTransient { try await database.execute(statement, logger: logger) }
        }
        guard let first = rows.first, first.fresh else { throw APIError.replayed }
        return EnqueueResult(
            recipientCount: first.recipients, candidateDevices: first.jobs, overBudget: first.overBudget, leased: rows.compactMap(\.leased))
    }

    /// The caller's devices (read-only: the replay key is still consumed, as for every signed
    /// call), and what the relay watcher knows of where the caller is watched: the stored inbox
    /// list and the states reported by the instance that holds the caller's shard of `watchShards`.
    public func devices(auth: VerifiedHTTPAuth, watchShards: Int) async throws -> DeviceListing {
        let pubkey = auth.pubkey.hex
        let logger = self.logger
        return try await authorized(auth) { connection in
            var listing = DeviceListing()
            for (token, platform, environment, pushType, topic, watch, relays, registered) in try await connection.query(
                """
                SELECT device_token, platform, apns_environment, push_type, topic, relay_watch, relays, registered_at FROM devices
                WHERE pubkey = \(pubkey) ORDER BY registered_at, device_token
                """, logger: logger
            ).decode((String, String, String?, String, String, Bool, [String], Date).self) {
                listing.devices.append(
                    DeviceRecord(
                        deviceToken: token, platform: platform, environment: environment, pushType: pushType, topic: topic,
                        relayWatch: watch, relays: relays, registeredAt: registered))
            }
            guard listing.devices.contains(where: \.relayWatch) else { return listing }
            for relays in try await connection.query(
                "SELECT relays FROM inbox_relay_lists WHERE pubkey = \(pubkey)", logger: logger
            ).decode([String].self) { listing.inboxList = relays }
            for (url, state) in try await connection.query(
                """
                SELECT r.url, r.state FROM watch_relay_states r JOIN watch_shards s ON s.owner = r.instance_id
                WHERE s.shard = linkstr_watch_shard(\(pubkey), \(watchShards)::int) AND s.expires_at > now()
                """, logger: logger
            ).decode((String, String).self) { listing.relayStates[url] = state }
            return listing
        }
    }

    /// Erases everything stored for the caller: devices (and with them queued jobs and their
    /// places in queued batches), archive state and dedupe rows. Returns the number of devices removed.
    public func deleteAccount(auth: VerifiedHTTPAuth) async throws -> Int {
        let pubkey = auth.pubkey.hex
        let logger = self.logger
        return try await authorized(auth) { connection in
            let devices = try await connection.query("DELETE FROM devices WHERE pubkey = \(pubkey) RETURNING 1", logger: logger).count
            // The devices' jobs went with them (the `devices_drop_jobs` trigger, migration 0008).
            // This catches a job queued for a token that moved to another pubkey meanwhile
            // (delivery would drop it): a scan of the queue, which is small and erasures rare, so
            // push_jobs needs no pubkey index.
            try await connection.query("DELETE FROM push_jobs WHERE pubkey = \(pubkey)", logger: logger)
            // The caller's devices leave the batches still queued or in flight (typed pushes, and
            // gift wraps sent at once; a scan too: batches live minutes at most), and a batch left
            // with none goes.
            try await BatchMembersRemoval(pubkey: pubkey, conversationIDs: nil).run(on: connection, logger: logger)
            try await connection.query("DELETE FROM archived_conversations WHERE pubkey = \(pubkey)", logger: logger)
            try await connection.query("DELETE FROM push_dedupe WHERE recipient = \(pubkey)", logger: logger)
            try await connection.query("DELETE FROM push_suppressions WHERE pubkey = \(pubkey)", logger: logger)
            try await connection.query("DELETE FROM watch_live WHERE pubkey = \(pubkey)", logger: logger)
            try await connection.query("DELETE FROM inbox_relay_lists WHERE pubkey = \(pubkey)", logger: logger)
            try await connection.query("DELETE FROM inbox_wraps WHERE recipient = \(pubkey)", logger: logger)
            return devices
        }
    }

    /// Records wraps the relay watcher must not push to the caller's own devices, for the watch
    /// window. Returns how many were stored (ids already suppressed are renewed and counted).
    public func suppress(_ request: SuppressionRequest, auth: VerifiedHTTPAuth) async throws -> Int {
        let pubkey = auth.pubkey.hex
        let expires = Date().addingTimeInterval(TimeInterval(WatchSettings.windowSeconds))
        let logger = self.logger
        return try await authorized(auth) { connection in
            try await connection.query(
                """
                INSERT INTO push_suppressions (pubkey, event_id, expires_at)
                SELECT \(pubkey), id, \(expires) FROM unnest(\(request.eventIDs)::text[]) AS id ORDER BY id
                ON CONFLICT (pubkey, event_id) DO UPDATE SET expires_at = EXCLUDED.expires_at
                RETURNING 1
                """, logger: logger
            ).count
        }
    }

    /// Deletes expired replay keys and suppressions, dedupe rows and seen wraps past their
    /// retention, live marks of pubkeys nothing watches, and pacing rows that say nothing.
    /// Returns rows removed.
    @discardableResult
    public func prune(now: Date = Date()) async throws -> Int {
        let dedupeCutoff = now.addingTimeInterval(-Self.dedupeRetention)
        let seenCutoff = now.addingTimeInterval(-TimeInterval(WatchSettings.seenRetentionSeconds))
        let staleInstances = now.addingTimeInterval(-86_400)
        let refillSeconds = deviceBudget?.refillSeconds ?? 0
        return try await storage {
            var removed = 0
            for statement: PostgresQuery in [
                "DELETE FROM auth_replays WHERE expires_at < \(now) RETURNING 1",
                "DELETE FROM push_dedupe WHERE created_at < \(dedupeCutoff) RETURNING 1",
                "DELETE FROM push_suppressions WHERE expires_at < \(now) RETURNING 1",
                "DELETE FROM seen_wraps WHERE seen_at < \(seenCutoff) RETURNING 1",
                "DELETE FROM watch_instances WHERE heartbeat_at < \(staleInstances) RETURNING 1",
                // Live marks of pubkeys nothing watches: the watcher forgets them as they go, but
                // a forget can be lost (the database away for longer than its retries, or the
                // change made while no instance held the pubkey's shard). A row left behind would
                // make a later registration take the pubkey's unclaimed wraps for live ones. Safe
                // against a registration in flight: a row it marks is only visible once its
                // device is.
                """
                DELETE FROM watch_live w
                WHERE NOT EXISTS (SELECT 1 FROM devices d WHERE d.relay_watch AND d.pubkey = w.pubkey) RETURNING 1
                """,
                // Inbox lists of users nobody watches any more; a later registration finds the
                // list again on the indexer relays.
                """
                DELETE FROM inbox_relay_lists l
                WHERE NOT EXISTS (SELECT 1 FROM devices d WHERE d.relay_watch AND d.pubkey = l.pubkey) RETURNING 1
                """,
                // States of instances that stopped without releasing their shards.
                """
                DELETE FROM watch_relay_states r
                WHERE NOT EXISTS (SELECT 1 FROM watch_instances i WHERE i.instance_id = r.instance_id) RETURNING 1
                """,
            ] {
                removed += try await database.query(statement, logger: logger).count
            }
            // Pacing rows that say nothing: the bucket untouched for its whole refill time (full
            // again) and the window passed. Both are the database's times, so they are judged by
            // its clock. A push holding a row keeps it (SKIP LOCKED: a prune never waits for a
            // push, so the two never wait on each other in a cycle), and at most
            // `pacingPruneBatch` rows are locked and named at a time.
            while true {
                let pruned = try await database.query(
                    """
                    DELETE FROM device_pacing WHERE device_token = ANY (ARRAY(
                        SELECT device_token FROM device_pacing
                        WHERE updated_at < now() - make_interval(secs => \(refillSeconds)) AND (next_at IS NULL OR next_at <= now())
                        LIMIT \(Self.pacingPruneBatch) FOR UPDATE SKIP LOCKED))
                    RETURNING 1
                    """, logger: logger
                ).count
                removed += pruned
                if pruned < Self.pacingPruneBatch { break }
            }
            return removed
        }
    }

    /// Pacing rows one prune statement deletes at most.
    static let pacingPruneBatch = 10_000

    static func logStorageFailure(_ error: PSQLError, _ logger: Logger) {
        logger.error("storage failure", metadata: ["db.code": "\(error.serverInfo?[.sqlState] ?? "none")", "db.error": "\(error.code)"])
    }

    /// The pubkey's last device went: its archive state and the wraps the inbox relay kept for it go too.
    static func dropOrphanedArchive(_ pubkey: String, _ connection: DatabaseConnection, _ logger: Logger) async throws {
        try await connection.query(
            """
            DELETE FROM archived_conversations WHERE pubkey = \(pubkey)
            AND NOT EXISTS (SELECT 1 FROM devices WHERE pubkey = \(pubkey))
            """, logger: logger)
        try await connection.query(
            """
            DELETE FROM inbox_wraps WHERE recipient = \(pubkey)
            AND NOT EXISTS (SELECT 1 FROM devices WHERE pubkey = \(pubkey))
            """, logger: logger)
    }
}
