public import Foundation
public import NostrProtocol

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The client side of the push gateway (docs/linkstr-wire.md §4): every request signed in the linkstr
/// NIP-98 dialect with a fresh nonce. Archive syncs are serialised (an actor, one at a time) and a
/// failed batch is retried with the same ids, so nothing is lost between batches.
public actor PushRegistrar {
    public enum Environment: String, Sendable {
        case sandbox
        case production
    }

    public enum NotificationType: String, Sendable {
        case newPost = "new_post"
        case newEmojiReaction = "new_emoji_reaction"
    }

    public enum RegistrarError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The gateway answered with an error (status and its `error` message).
        case rejected(status: Int, message: String)
        /// No answer (connection refused, timeout).
        case unreachable(String)
        case invalidInput(String)

        public var description: String {
            switch self {
            case .rejected(let status, let message): "push gateway refused (\(status)): \(message)"
            case .unreachable(let reason): "push gateway unreachable: \(reason)"
            case .invalidInput(let reason): reason
            }
        }
    }

    /// The gateway's answer to `POST /v1/push`.
    public struct PushAccepted: Sendable, Equatable {
        public var recipientCount: Int
        public var candidateDevices: Int

        public init(recipientCount: Int, candidateDevices: Int) {
            self.recipientCount = recipientCount
            self.candidateDevices = candidateDevices
        }
    }

    public static let archiveBatchSize = 200
    public static let suppressionBatchSize = 500

    public let baseURL: URL
    private let keys: Keys
    private let transport: any HTTPTransport
    /// Attempts per request for archive batches and suppressions (the first plus retries).
    private let attempts: Int
    private let retryDelay: Duration

    public init(
        baseURL: URL, keys: Keys, transport: any HTTPTransport = URLSessionTransport(), attempts: Int = 3,
        retryDelay: Duration = .milliseconds(500)
    ) {
        self.baseURL = baseURL
        self.keys = keys
        self.transport = transport
        self.attempts = max(1, attempts)
        self.retryDelay = retryDelay
    }

    // MARK: Devices

    /// Registers (or moves to this account) the device. `relayWatch` asks the gateway to watch
    /// relays for this account's gift wraps; `topic` picks one of the gateway's apps.
    public func register(deviceToken: String, environment: Environment, relayWatch: Bool = false, topic: String? = nil)
        async throws(RegistrarError)
    {
        try await register(.apns(token: deviceToken, environment: environment), relayWatch: relayWatch, topic: topic)
    }

    /// Registers (or moves to this account) a device of any platform the gateway serves.
    public func register(_ device: PushDevice, relayWatch: Bool = false, topic: String? = nil) async throws(RegistrarError) {
        var body = device.fields
        if relayWatch { body["relay_watch"] = .bool(true) }
        if let topic { body["topic"] = .string(topic) }
        _ = try await call("POST", "/v1/devices/register", body: .object(body))
    }

    /// Unregisters the device. On logout call it before the key is forgotten: the request is
    /// signed by the account that registered it.
    public func unregister(deviceToken: String) async throws(RegistrarError) {
        _ = try await call("POST", "/v1/devices/unregister", body: .object(["device_token": .string(deviceToken)]))
    }

    /// Unregisters a device of any platform.
    public func unregister(_ device: PushDevice) async throws(RegistrarError) {
        _ = try await call("POST", "/v1/devices/unregister", body: .object(device.unregisterFields))
    }

    /// The key a web app passes to `pushManager.subscribe` as `applicationServerKey`; nil when the
    /// gateway does not serve Web Push.
    public func vapidPublicKey() async throws(RegistrarError) -> String? {
        do {
            return try await call("GET", "/v1/webpush/vapid-public-key", body: nil)["public_key"]?.stringValue
        } catch .rejected(404, _) {
            return nil
        }
    }

    /// The caller's devices, as the gateway lists them.
    public func devices() async throws(RegistrarError) -> [JSONValue] {
        try await listing().devices
    }

    /// The gateway's own inbox relay (`GET /v1/devices`' `inbox_relay`); nil when it serves none.
    public func inboxRelay() async throws(RegistrarError) -> RelayURL? {
        try Self.inboxRelayURL(try await listing().inboxRelay)
    }

    /// `GET /v1/devices` read once: the caller's devices and the gateway's `inbox_relay` as sent
    /// (`inboxRelayURL` reads it).
    public func listing() async throws(RegistrarError) -> (devices: [JSONValue], inboxRelay: String?) {
        let answer = try await call("GET", "/v1/devices", body: nil)
        return (answer["devices"]?.arrayValue ?? [], answer["inbox_relay"]?.stringValue)
    }

    /// A listing's `inbox_relay` as a relay URL; nil when the gateway serves none.
    public static func inboxRelayURL(_ text: String?) throws(RegistrarError) -> RelayURL? {
        guard let text else { return nil }
        do { return try RelayURL(text) } catch { throw .rejected(status: 200, message: "inbox_relay is not a relay URL: \(error)") }
    }

    // MARK: Archive state

    /// Sends the archive state of `known` conversations in sorted batches of 200: each batch
    /// carries its ids as `known_conversation_ids` and the archived ones among them, so the
    /// gateway changes exactly those. A batch that fails is retried as it was; if it still fails
    /// the error is thrown and the batches after it are not sent (call again to resume).
    public func syncArchiveState(archived: Set<String>, known: Set<String>) async throws(RegistrarError) {
        let scope = known.union(archived).map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }.sorted()
        for start in stride(from: 0, to: scope.count, by: Self.archiveBatchSize) {
            let batch = Array(scope[start..<min(start + Self.archiveBatchSize, scope.count)])
            let body = JSONValue.object([
                "archived_conversation_ids": .array(batch.filter(archived.contains).map { .string($0) }),
                "known_conversation_ids": .array(batch.map { .string($0) }),
            ])
            _ = try await withRetries { () async throws(RegistrarError) in
                try await self.call("PUT", "/v1/conversations/archive-state", body: body)
            }
        }
    }

    // MARK: Pushes

    /// Asks the gateway to push `recipients` (after the relays accepted the message). Only roots
    /// and active reactions push.
    public func enqueuePush(
        _ type: NotificationType, eventID: String, conversationID: String, recipients: [String], emoji: String? = nil,
        postID: String? = nil
    ) async throws(RegistrarError) -> PushAccepted {
        guard !recipients.isEmpty else { throw .invalidInput("no recipients") }
        if type == .newEmojiReaction, emoji?.isEmpty ?? true { throw .invalidInput("a reaction push needs its emoji") }
        var body: [String: JSONValue] = [
            "notification_type": .string(type.rawValue), "event_id": .string(eventID), "conversation_id": .string(conversationID),
            "recipient_pubkeys": .array(recipients.map { .string($0) }),
        ]
        if let emoji { body["emoji"] = .string(emoji) }
        if let postID { body["post_id"] = .string(postID) }
        let answer = try await call("POST", "/v1/push", body: .object(body))
        return PushAccepted(
            recipientCount: Int(answer["recipient_count"]?.integerValue ?? 0),
            candidateDevices: Int(answer["candidate_devices"]?.integerValue ?? 0))
    }

    /// Tells the gateway's relay watcher not to push our own devices for these wraps (our own
    /// copies), before they are published. Batches of 500, each retried.
    public func suppress(wrapIDs: [String]) async throws(RegistrarError) {
        for start in stride(from: 0, to: wrapIDs.count, by: Self.suppressionBatchSize) {
            let batch = wrapIDs[start..<min(start + Self.suppressionBatchSize, wrapIDs.count)]
            let body = JSONValue.object(["event_ids": .array(batch.map { .string($0) })])
            _ = try await withRetries { () async throws(RegistrarError) in try await self.call("POST", "/v1/suppressions", body: body) }
        }
    }

    // MARK: Requests

    private func withRetries<T>(_ body: () async throws(RegistrarError) -> T) async throws(RegistrarError) -> T {
        var attempt = 1
        while true {
            do {
                return try await body()
            } catch {
                // A 4xx other than 401 will fail the same way again.
                if case .rejected(let status, _) = error, (400..<500).contains(status), status != 401 { throw error }
                guard attempt < attempts else { throw error }
                attempt += 1
                try? await Task.sleep(for: retryDelay)
            }
        }
    }

    /// One signed request; a fresh nonce each time, so a retry is a new request.
    private func call(_ method: String, _ path: String, body: JSONValue?) async throws(RegistrarError) -> [String: JSONValue] {
        let bytes = body.map { Array($0.serialized.utf8) } ?? []
        let event = HTTPAuth.linkstrEvent(keys: keys, method: method, path: path, body: bytes, nonce: nil, createdAt: UnixTime.now())
        var request = URLRequest(url: baseURL.appendingPathComponent(String(path.dropFirst())))
        request.httpMethod = method
        request.setValue(HTTPAuth.headerValue(for: event), forHTTPHeaderField: "Authorization")
        request.timeoutInterval = 15
        if body != nil {
            request.httpBody = Data(bytes)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let status: Int, data: Data
        do { (status, data) = try await transport.send(request) } catch { throw .unreachable("\(error)") }
        let json = (try? JSONValue(parsing: String(decoding: data, as: UTF8.self)))?.objectValue ?? [:]
        guard (200..<300).contains(status) else { throw .rejected(status: status, message: json["error"]?.stringValue ?? "HTTP \(status)") }
        return json
    }
}
