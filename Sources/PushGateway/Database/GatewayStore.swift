public import Foundation
public import Logging
public import NostrProtocol
public import PostgresNIO

/// A registered device as the API shows it to its owner.
public struct DeviceRecord: Sendable, Equatable {
    public var deviceToken: String
    public var environment: String
    public var topic: String
    public var relayWatch: Bool
    public var registeredAt: Date
}

/// All SQL of the HTTP API. Every mutating call runs in one transaction that first consumes the
/// request's single-use authorization key, so a replayed request changes nothing and a failed
/// one leaves the key unused.
public struct GatewayStore: Sendable {
    public let client: PostgresClient
    public let logger: Logger
    /// How far `created_at` may be from now (`AUTH_MAX_SKEW_SECONDS`): replay keys are kept
    /// until an event could no longer pass that check.
    public let replayWindowSeconds: Int64
    /// How long dedupe rows are kept.
    public static let dedupeRetention: TimeInterval = 30 * 86_400
    /// How long a queued job may wait for delivery.
    public static let jobLifetimeSeconds = 15 * 60

    public init(client: PostgresClient, logger: Logger, replayWindowSeconds: Int64 = 300) {
        self.client = client
        self.logger = logger
        self.replayWindowSeconds = replayWindowSeconds
    }

    /// Runs `body` in a transaction after recording `auth`'s replay key; a key seen before is a 401.
    func authorized<Result: Sendable>(
        _ auth: VerifiedHTTPAuth, _ body: @Sendable (PostgresConnection) async throws -> Result
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
                    return try await client.withTransaction(logger: logger) { connection in
                        let inserted = try await connection.query("""
                            INSERT INTO auth_replays (pubkey, replay_key, expires_at) VALUES (\(pubkey), \(key), \(expires))
                            ON CONFLICT DO NOTHING RETURNING 1
                            """, logger: logger).collect().count
                        guard inserted == 1 else { throw APIError.replayed }
                        return try await body(connection)
                    }
                } catch let error as PostgresTransactionError where attempt < 3 && Self.isTransient(error) {
                    continue
                }
            }
        }
    }

    /// The replay key of `auth` and when it may be forgotten.
    func replayKey(_ auth: VerifiedHTTPAuth) -> (key: String, expires: Date) {
        (auth.replayKey, Date(timeIntervalSince1970: TimeInterval(auth.event.createdAt + replayWindowSeconds + 60)))
    }

    /// Runs one statement (its own transaction) whose single row is integer counts, and returns
    /// them. A transient failure (foreign-key race, deadlock, serialization) rolls the whole
    /// statement back, replay key included, so it is run again, up to three times.
    func countsStatement(_ query: PostgresQuery) async throws -> [Int] {
        try await storage {
            var attempt = 0
            while true {
                attempt += 1
                do {
                    for try await row in try await client.query(query, logger: logger) {
                        return try row.makeRandomAccess().map { try $0.decode(Int.self) }
                    }
                    return []
                } catch let error as PSQLError where attempt < 3 && Self.isTransient(error) {
                    continue
                }
            }
        }
    }

    static func isTransient(_ error: PSQLError) -> Bool {
        guard let state = error.serverInfo?[.sqlState] else { return false }
        return ["23503", "40P01", "40001"].contains(state)
    }

    static func isTransient(_ error: PostgresTransactionError) -> Bool {
        guard let psql = (error.closureError ?? error.commitError) as? PSQLError, let state = psql.serverInfo?[.sqlState] else { return false }
        return ["23503", "40P01", "40001"].contains(state)
    }

    /// Maps anything that is not already an API error to a plain 500, logging only the error type
    /// and PostgreSQL's SQLSTATE code, never values.
    func storage<Result>(_ body: () async throws -> Result) async throws -> Result {
        do {
            return try await body()
        } catch let error as APIError {
            throw error
        } catch let error as PostgresTransactionError where error.closureError is APIError {
            // A rejection decided inside the transaction (a replayed key); it was rolled back.
            throw error.closureError as! APIError
        } catch let error as PSQLError {
            Self.logStorageFailure(error, logger)
            throw APIError.storage
        } catch let error as PostgresTransactionError {
            let inner = error.closureError ?? error.commitError ?? error.beginError
            if let psql = inner as? PSQLError { Self.logStorageFailure(psql, logger) } else {
                logger.error("storage failure", metadata: ["error.type": "\(type(of: inner))"])
            }
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
        // One statement, so one round trip: the hot path of every app launch. Every part after
        // `replay` is conditional on the key being new, so a replay changes nothing. `previous`
        // locks the row, so a concurrent move is seen; the archive check excludes the moving token
        // because the statement's snapshot still shows it under its previous owner.
        let counts = try await countsStatement("""
            WITH replay AS (
                INSERT INTO auth_replays (pubkey, replay_key, expires_at) VALUES (\(pubkey), \(key), \(expires))
                ON CONFLICT DO NOTHING RETURNING 1
            ), previous AS (
                SELECT pubkey FROM devices WHERE device_token = \(request.deviceToken) AND EXISTS (SELECT 1 FROM replay) FOR UPDATE
            ), upsert AS (
                INSERT INTO devices (device_token, pubkey, apns_environment, topic, relay_watch)
                SELECT \(request.deviceToken), \(pubkey), \(request.environment.rawValue), \(topic), \(request.relayWatch)
                WHERE EXISTS (SELECT 1 FROM replay)
                ON CONFLICT (device_token) DO UPDATE SET pubkey = EXCLUDED.pubkey, apns_environment = EXCLUDED.apns_environment,
                    topic = EXCLUDED.topic, relay_watch = EXCLUDED.relay_watch, updated_at = now()
            ), moved_jobs AS (
                DELETE FROM push_jobs WHERE device_token = \(request.deviceToken) AND EXISTS (SELECT 1 FROM previous WHERE pubkey <> \(pubkey))
            ), orphaned_archive AS (
                DELETE FROM archived_conversations a WHERE a.pubkey IN (SELECT pubkey FROM previous WHERE pubkey <> \(pubkey))
                  AND NOT EXISTS (SELECT 1 FROM devices d WHERE d.pubkey = a.pubkey AND d.device_token <> \(request.deviceToken))
            )
            SELECT (SELECT count(*) FROM replay)::int
            """)
        guard counts.first == 1 else { throw APIError.replayed }
    }

    /// Removes the caller's own device (a token owned by someone else is left alone).
    @discardableResult
    public func unregister(deviceToken: String, auth: VerifiedHTTPAuth) async throws -> Bool {
        let pubkey = auth.pubkey.hex
        let logger = self.logger
        return try await authorized(auth) { connection in
            let removed = try await connection.query(
                "DELETE FROM devices WHERE device_token = \(deviceToken) AND pubkey = \(pubkey) RETURNING 1", logger: logger
            ).collect().count
            try await Self.dropOrphanedArchive(pubkey, connection, logger)
            return removed > 0
        }
    }

    /// Applies an archive update; returns false when nothing was stored because the caller has no
    /// device. Archiving cancels queued jobs for those conversations.
    @discardableResult
    public func updateArchive(_ request: ArchiveStateRequest, auth: VerifiedHTTPAuth) async throws -> Bool {
        let pubkey = auth.pubkey.hex
        let logger = self.logger
        return try await authorized(auth) { connection in
            let hasDevice = try await connection.query("SELECT 1 FROM devices WHERE pubkey = \(pubkey) LIMIT 1 FOR SHARE", logger: logger).collect().count > 0
            guard hasDevice else { return false }
            if let known = request.known {
                guard !known.isEmpty else { return true }
                try await connection.query(
                    "DELETE FROM archived_conversations WHERE pubkey = \(pubkey) AND conversation_id = ANY(\(known))", logger: logger)
            } else {
                try await connection.query("DELETE FROM archived_conversations WHERE pubkey = \(pubkey)", logger: logger)
            }
            if !request.archived.isEmpty {
                try await connection.query("""
                    INSERT INTO archived_conversations (pubkey, conversation_id)
                    SELECT \(pubkey), unnest(\(request.archived)::text[]) ON CONFLICT DO NOTHING
                    """, logger: logger)
                try await connection.query(
                    "DELETE FROM push_jobs WHERE pubkey = \(pubkey) AND conversation_id = ANY(\(request.archived))", logger: logger)
            }
            return true
        }
    }

    public struct EnqueueResult: Sendable, Equatable {
        public var recipientCount: Int
        public var candidateDevices: Int
    }

    /// Dedupes per (event, type, recipient), skips the sender, recipients without devices and
    /// archived conversations, and queues one job per remaining device, all in one statement.
    /// `skipRelayWatchDevices`: while the relay watcher runs, devices it serves get no typed push.
    public func enqueue(_ request: PushRequest, auth: VerifiedHTTPAuth, skipRelayWatchDevices: Bool = false) async throws -> EnqueueResult {
        let sender = auth.pubkey.hex
        let lifetime = Self.jobLifetimeSeconds
        let (key, expires) = replayKey(auth)
        // One statement (one round trip); everything after `replay` depends on the key being new.
        let counts = try await countsStatement("""
            WITH replay AS (
                INSERT INTO auth_replays (pubkey, replay_key, expires_at) VALUES (\(sender), \(key), \(expires))
                ON CONFLICT DO NOTHING RETURNING 1
            ), recipients AS (
                SELECT DISTINCT r AS pubkey FROM unnest(\(request.recipients)::text[]) AS r
                WHERE r <> \(sender) AND EXISTS (SELECT 1 FROM replay)
            ), fresh AS (
                INSERT INTO push_dedupe (event_id, notification_type, recipient)
                SELECT \(request.eventID), \(request.type.rawValue), pubkey FROM recipients ORDER BY pubkey
                ON CONFLICT DO NOTHING RETURNING recipient
            ), jobs AS (
                INSERT INTO push_jobs (apns_id, device_token, pubkey, notification_type, event_id, conversation_id, emoji, post_id, expires_at)
                SELECT gen_random_uuid(), d.device_token, d.pubkey, \(request.type.rawValue), \(request.eventID), \(request.conversationID),
                       \(request.emoji), \(request.postID), now() + make_interval(secs => \(lifetime))
                FROM fresh f JOIN devices d ON d.pubkey = f.recipient
                WHERE NOT EXISTS (SELECT 1 FROM archived_conversations a WHERE a.pubkey = d.pubkey AND a.conversation_id = \(request.conversationID))
                  AND NOT (d.relay_watch AND \(skipRelayWatchDevices))
                RETURNING 1
            )
            SELECT (SELECT count(*) FROM replay)::int, (SELECT count(*) FROM recipients)::int, (SELECT count(*) FROM jobs)::int
            """)
        guard counts.count == 3, counts[0] == 1 else { throw APIError.replayed }
        return EnqueueResult(recipientCount: counts[1], candidateDevices: counts[2])
    }

    /// The caller's devices (read-only: the replay key is still consumed, as for every signed call).
    public func devices(auth: VerifiedHTTPAuth) async throws -> [DeviceRecord] {
        let pubkey = auth.pubkey.hex
        let logger = self.logger
        return try await authorized(auth) { connection in
            var records: [DeviceRecord] = []
            for try await (token, environment, topic, watch, registered) in try await connection.query("""
                SELECT device_token, apns_environment, topic, relay_watch, registered_at FROM devices
                WHERE pubkey = \(pubkey) ORDER BY registered_at, device_token
                """, logger: logger).decode((String, String, String, Bool, Date).self) {
                records.append(DeviceRecord(deviceToken: token, environment: environment, topic: topic, relayWatch: watch, registeredAt: registered))
            }
            return records
        }
    }

    /// Erases everything stored for the caller: devices (and with them queued jobs), archive
    /// state and dedupe rows. Returns the number of devices removed.
    public func deleteAccount(auth: VerifiedHTTPAuth) async throws -> Int {
        let pubkey = auth.pubkey.hex
        let logger = self.logger
        return try await authorized(auth) { connection in
            let devices = try await connection.query("DELETE FROM devices WHERE pubkey = \(pubkey) RETURNING 1", logger: logger).collect().count
            try await connection.query("DELETE FROM push_jobs WHERE pubkey = \(pubkey)", logger: logger)
            try await connection.query("DELETE FROM archived_conversations WHERE pubkey = \(pubkey)", logger: logger)
            try await connection.query("DELETE FROM push_dedupe WHERE recipient = \(pubkey)", logger: logger)
            return devices
        }
    }

    /// Deletes expired replay keys and dedupe rows past their retention. Returns rows removed.
    @discardableResult
    public func prune(now: Date = Date()) async throws -> Int {
        let dedupeCutoff = now.addingTimeInterval(-Self.dedupeRetention)
        return try await storage {
            let replays = try await client.query("DELETE FROM auth_replays WHERE expires_at < \(now) RETURNING 1", logger: logger).collect().count
            let dedupe = try await client.query("DELETE FROM push_dedupe WHERE created_at < \(dedupeCutoff) RETURNING 1", logger: logger).collect().count
            return replays + dedupe
        }
    }

    static func logStorageFailure(_ error: PSQLError, _ logger: Logger) {
        logger.error("storage failure", metadata: ["db.code": "\(error.serverInfo?[.sqlState] ?? "none")", "db.error": "\(error.code)"])
    }

    static func dropOrphanedArchive(_ pubkey: String, _ connection: PostgresConnection, _ logger: Logger) async throws {
        try await connection.query("""
            DELETE FROM archived_conversations WHERE pubkey = \(pubkey)
            AND NOT EXISTS (SELECT 1 FROM devices WHERE pubkey = \(pubkey))
            """, logger: logger)
    }
}
