package import Foundation
import NIOCore
import NIOHTTP2
import NostrProtocol
import Synchronization

/// Everything the sandbox's connections share: the checks, scripted-failure counters, the record
/// of answered pushes and stream statistics. Thread-safe: NIO calls it from every event loop.
public final class SandboxState: Sendable {
    public let configuration: SandboxConfiguration
    /// The Web Push face (`/webpush/`), on the same port.
    package let webPush = WebPushService()
    /// The FCM face (`/fcm/`): OAuth token endpoint and `messages:send`, on the same port.
    package let fcm: FCMService
    let validator: APNsRequestValidator
    let verifier: ProviderTokenVerifier?
    private let scriptedFailuresPlayed = Locked<[String: Int]>([:])
    private let log = Locked(Log())
    private let file: Locked<FileHandle?>
    private let peakStreams = Atomic<Int>(0)
    private let openConnections = Atomic<Int>(0)
    private let streamLimit: Atomic<Int>
    /// Pushes left before the scripted GOAWAY (0: none scheduled).
    private let goAwayCountdown = Atomic<Int>(0)
    private let goAwaysSent = Atomic<Int>(0)
    private let channels = Locked<[ObjectIdentifier: any Channel]>([:])

    struct Log {
        var records: [DeliveryRecord] = []
        var firstKept = 0
        var nextSequence = 1
        var byStatus: [Int: Int] = [:]
    }

    public init(configuration: SandboxConfiguration) throws {
        self.configuration = configuration
        fcm = try FCMService(projectID: configuration.fcmProjectID, tokenLifetimeSeconds: configuration.fcmTokenLifetimeSeconds)
        streamLimit = Atomic(configuration.maxConcurrentStreams)
        validator = APNsRequestValidator(allowedTopics: configuration.allowedTopics)
        verifier = configuration.providerKeys.isEmpty ? nil : ProviderTokenVerifier(keys: configuration.providerKeys)
        var handle: FileHandle?
        if let path = configuration.deliveriesFile {
            if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
            guard let opened = FileHandle(forWritingAtPath: path) else { throw SandboxError("cannot open deliveries file \(path)") }
            opened.seekToEndOfFile()
            handle = opened
        }
        file = Locked(handle)
    }

    /// The face that serves `path`, or nil for APNs's own routes.
    package func face(for path: String) -> (any SandboxFace)? {
        if path.hasPrefix("/webpush/") { return webPush }
        if path.hasPrefix("/fcm/") { return fcm }
        return nil
    }

    /// Answers one push the way APNs would.
    package func answer(_ request: SandboxRequest, on connection: SandboxConnectionState, now: Date = Date()) -> SandboxReply {
        let nowSeconds = Int64(now.timeIntervalSince1970)
        let nowMilliseconds = Int64(now.timeIntervalSince1970 * 1000)
        // Read once: the checks, the scripted failures and the record all need it.
        let token = APNsRequestValidator.deviceToken(inPath: request.path)
        let headers = APNsHeaderValues(request.headers)
        let reply = decide(
            request, token: token, headers: headers, connection: connection, nowSeconds: nowSeconds, nowMilliseconds: nowMilliseconds)
        if let token { record(request, token: String(token), headers: headers, reply: reply, at: nowMilliseconds) }
        return reply
    }

    private func decide(
        _ request: SandboxRequest, token: Substring?, headers: APNsHeaderValues, connection: SandboxConnectionState, nowSeconds: Int64,
        nowMilliseconds: Int64
    ) -> SandboxReply {
        if let rejected = validator.check(request, token: token, headers: headers) { return rejected }
        if let verifier {
            let authorization = headers.authorization
            switch verifier.verify(authorization: authorization, now: nowSeconds) {
            case .rejected(let reason): return SandboxReply(status: 403, reason: reason)
            case .valid(let issuedAt):
                if !connection.accept(providerToken: authorization ?? "", issuedAt: issuedAt) {
                    return SandboxReply(status: 429, reason: "TooManyProviderTokenUpdates")
                }
            }
        }
        guard let token, let script = ScriptedFailure(token: token) else {
            return .ok
        }
        let fails = scriptedFailuresPlayed.withLock { played -> Bool in
            let key = String(token)
            if let limit = script.failures, played[key, default: 0] >= limit { return false }
            played[key, default: 0] += 1
            return true
        }
        return fails ? script.reply(nowMilliseconds: nowMilliseconds) : .ok
    }

    private func record(_ request: SandboxRequest, token: String, headers: APNsHeaderValues, reply: SandboxReply, at milliseconds: Int64) {
        let payload = String(decoding: request.body, as: UTF8.self)
        let line: String? = log.withLock { log in
            let record = DeliveryRecord(
                sequence: log.nextSequence, receivedAtMilliseconds: milliseconds, status: reply.status, reason: reply.reason,
                deviceToken: token, topic: headers.topic, apnsID: headers.id, pushType: headers.pushType, priority: headers.priority,
                collapseID: headers.collapseID, expiration: headers.expiration, payload: payload)
            log.nextSequence += 1
            log.byStatus[reply.status, default: 0] += 1
            log.records.append(record)
            if log.records.count - log.firstKept > configuration.keepRecords { log.firstKept += 1 }
            if log.firstKept > 4096, log.firstKept * 2 > log.records.count {
                log.records.removeFirst(log.firstKept)
                log.firstKept = 0
            }
            return configuration.deliveriesFile == nil ? nil : record.json.serialized + "\n"
        }
        if let line {
            file.withLock { $0?.write(Data(line.utf8)) }
        }
    }

    /// Records with a sequence number above `after`, optionally only one status.
    public func records(after: Int = 0, status: Int? = nil) -> [DeliveryRecord] {
        log.withLock { log in
            log.records[log.firstKept...].filter { $0.sequence > after && (status == nil || $0.status == status) }
        }
    }

    /// Forgets recorded pushes and scripted-failure counts (the file is left as it is).
    public func reset() {
        log.withLock { $0 = Log() }
        scriptedFailuresPlayed.withLock { $0.removeAll() }
        peakStreams.store(0, ordering: .relaxed)
    }

    public struct Statistics: Sendable {
        public var answered: Int
        public var byStatus: [Int: Int]
        /// The most streams one connection had open at once.
        public var peakConcurrentStreams: Int
        public var openConnections: Int
        /// GOAWAY frames sent on `POST /control/goaway`'s script.
        public var goAwaysSent: Int
    }

    public var statistics: Statistics {
        let (answered, byStatus) = log.withLock { ($0.nextSequence - 1, $0.byStatus) }
        return Statistics(
            answered: answered, byStatus: byStatus, peakConcurrentStreams: peakStreams.load(ordering: .relaxed),
            openConnections: openConnections.load(ordering: .relaxed), goAwaysSent: goAwaysSent.load(ordering: .relaxed))
    }

    /// Scripts a GOAWAY, as APNs sends before it takes a server down: when the `pushes`-th push
    /// from now opens its stream, that connection sends GOAWAY with the highest stream id it has
    /// answered. That push and every newer stream on the connection are never processed; the
    /// client must send those requests again on a new connection.
    public func scheduleGoAway(afterPushes pushes: Int) {
        goAwayCountdown.store(pushes, ordering: .relaxed)
    }

    /// Counts one push toward a scheduled GOAWAY; true for the push that triggers it.
    func pushTriggersGoAway() -> Bool {
        var current = goAwayCountdown.load(ordering: .relaxed)
        while current > 0 {
            let (exchanged, original) = goAwayCountdown.compareExchange(expected: current, desired: current - 1, ordering: .relaxed)
            if exchanged { return current == 1 }
            current = original
        }
        return false
    }

    func goAwaySent() { goAwaysSent.add(1, ordering: .relaxed) }

    func connectionOpened(_ channel: any Channel) {
        openConnections.add(1, ordering: .relaxed)
        channels.withLock { $0[ObjectIdentifier(channel)] = channel }
    }

    func connectionClosed(_ channel: any Channel) {
        openConnections.subtract(1, ordering: .relaxed)
        channels.withLock { $0[ObjectIdentifier(channel)] = nil }
    }

    /// The SETTINGS_MAX_CONCURRENT_STREAMS new connections get, and open ones were last sent.
    public var maxConcurrentStreams: Int { streamLimit.load(ordering: .relaxed) }

    /// Changes the stream limit while running, as Apple may: new connections start with it and
    /// every open connection is sent a SETTINGS frame with it. The peak statistic starts over, so
    /// a test can check what happened after the change.
    public func setMaxConcurrentStreams(_ value: Int) {
        streamLimit.store(value, ordering: .relaxed)
        peakStreams.store(0, ordering: .relaxed)
        let open = channels.withLock { Array($0.values) }
        for channel in open {
            let frame = HTTP2Frame(
                streamID: .rootStream, payload: .settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: value)])))
            channel.writeAndFlush(frame, promise: nil)
        }
    }

    func observeStreams(_ count: Int) {
        var current = peakStreams.load(ordering: .relaxed)
        while count > current {
            let (exchanged, original) = peakStreams.compareExchange(expected: current, desired: count, ordering: .relaxed)
            if exchanged { break }
            current = original
        }
    }

    func close() {
        file.withLock { handle in
            try? handle?.close()
            handle = nil
        }
    }
}

/// Per-connection state: open streams, and the provider token in use. Apple answers 429
/// `TooManyProviderTokenUpdates` when a connection's tokens are refreshed more often than every
/// 20 minutes; the sandbox judges that by the tokens' `iat`, which keeps it deterministic for
/// senders whose clock is injected.
package final class SandboxConnectionState: Sendable {
    static let minimumTokenLifetime: Int64 = 20 * 60
    private let streams = Atomic<Int>(0)
    private let token = Locked<(value: String, since: Int64)?>(nil)

    package init() {}

    func streamOpened() -> Int { streams.add(1, ordering: .relaxed).newValue }
    func streamClosed() { streams.subtract(1, ordering: .relaxed) }

    package func accept(providerToken: String, issuedAt: Int64) -> Bool {
        token.withLock { current in
            guard let existing = current else {
                current = (providerToken, issuedAt)
                return true
            }
            if existing.value == providerToken { return true }
            guard issuedAt - existing.since >= Self.minimumTokenLifetime else { return false }
            current = (providerToken, issuedAt)
            return true
        }
    }
}

public struct SandboxError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
