import Crypto
public import Foundation
import GatewayWire
public import Hummingbird
import Logging
import NIOCore
import NostrProtocol
import NostrRelay
import PostgresNIO
import WebPush

/// The HTTP API: linkstr's routes exactly as the app calls them, plus the additions.
/// Every signed route reads the body (≤ 64 KiB), verifies the `Authorization: Nostr` header
/// against it, validates the body, and only then touches the database.
public struct GatewayAPI: Sendable {
    public static let maxBodyBytes = 64 * 1024

    let store: GatewayStore
    let verifier: HTTPAuthVerifier
    let defaultTopic: String
    let topics: Set<String>
    /// Apps listed without an APNs key: no iOS token registers for them.
    let keylessTopics: Set<String>
    /// The platforms this gateway delivers to: a registration for another is refused rather than
    /// stored and never pushed.
    let platforms: Set<PushPlatform>
    /// The VAPID key browsers subscribe with; nil when Web Push is off.
    let vapidKeys: VAPIDKeyStore?
    /// Which relay URLs a registration may name (`WATCH_ALLOW_PRIVATE_RELAYS`).
    let relayPolicy: RelayAddressPolicy
    /// Which push endpoints a registration may name (`WEBPUSH_ALLOW_PRIVATE_ENDPOINTS`), by
    /// their URL and by the addresses their names resolve to.
    let endpointHosts: EndpointHostCheck
    /// `RELAYS`, the shard count and the per-user relay limit, for `GET /v1/devices`' `watch`.
    let watchSettings: WatchSettings
    let adminToken: String?
    /// The console's sign-in cookies; nil when admin routes are off.
    let adminSession: AdminSession?
    /// Sign-in attempts per client address: few enough that guessing `ADMIN_TOKEN` through the
    /// form is hopeless, and on even when `RATE_LIMIT_IP` is off.
    let signInLimiter = RateLimiter(limit: GatewayAPI.signInLimit)
    static let signInLimit = RateLimitSettings.Limit(perSecond: 10.0 / 60, burst: 10)
    let startedAt: Date
    let latestMigration: Int
    public let metrics: GatewayMetrics
    /// The relay watcher, when `RELAYS` is set: typed pushes then skip relay-watch devices, and
    /// `/readyz` and `/admin/status` report it.
    let watcher: RelayWatcher?
    /// The inbox relay, when `INBOX_RELAY=1`: `/admin/status` counts its connections.
    let inbox: InboxRelay?
    /// Its URL, which `GET /v1/devices` tells clients.
    var inboxRelayURL: String? { inbox?.settings.relayURL?.description }
    let wakeup: WakeupSignal?
    /// Sends the jobs a push queues already claimed, skipping the claim round trip; nil when this
    /// instance does not deliver (or `DELIVERY_DIRECT_LIMIT=0`).
    let directDelivery: DirectDelivery?
    /// Per-instance limits (`RATE_LIMIT_IP`, `RATE_LIMIT_PUBKEY`); nil when off.
    let ipLimiter: RateLimiter?
    let pubkeyLimiter: RateLimiter?
    let trustForwardedFor: Bool
    /// Headers seen used here, so a replay is refused before it is charged to its pubkey.
    let usedAuthorizations: UsedAuthorizations
    /// What `/readyz` answers, read from the database at most once a second.
    let readiness: ThrottledSnapshot<(HTTPResponse.Status, [String: JSONValue])>
    /// The queue's depth for the gauges and the console, read at most once a second and within
    /// a deadline: without PostgreSQL the query would wait for a connection indefinitely, and the
    /// scrape with it, so an outage would also take away the metrics that describe it.
    let queueDepth: ThrottledSnapshot<QueueDepth?>

    /// `store` should be built with `configuration.authMaxSkewSeconds` as its replay window.
    public init(
        store: GatewayStore, configuration: GatewayConfiguration, latestMigration: Int, metrics: GatewayMetrics = GatewayMetrics(),
        watcher: RelayWatcher? = nil, inbox: InboxRelay? = nil, vapidKeys: VAPIDKeyStore? = nil, wakeup: WakeupSignal? = nil,
        directDelivery: DirectDelivery? = nil, startedAt: Date = Date()
    ) {
        self.store = store
        self.platforms = configuration.platforms
        self.vapidKeys = vapidKeys
        self.wakeup = wakeup
        self.directDelivery = directDelivery
        self.watcher = watcher
        self.inbox = inbox
        self.metrics = metrics
        self.verifier = HTTPAuthVerifier(maxSkewSeconds: configuration.authMaxSkewSeconds, publicBaseURL: configuration.publicURL)
        self.defaultTopic = configuration.apns.defaultTopic
        self.relayPolicy = RelayAddressPolicy(allowsPrivate: configuration.watch.allowPrivateRelays)
        self.endpointHosts = EndpointHostCheck(allowsPrivate: configuration.webPush.allowPrivateEndpoints)
        self.watchSettings = configuration.watchSettings
        self.topics = configuration.apns.topics
        self.keylessTopics = configuration.apns.disabled ? [] : configuration.apns.keylessTopics
        self.adminToken = configuration.adminToken
        // Secure unless the operator says the gateway is reached over plain HTTP (browsers keep
        // Secure cookies for http://localhost and 127.0.0.1, so local use works either way).
        self.adminSession = configuration.adminToken.map {
            AdminSession(adminToken: $0, secure: configuration.publicURL?.hasPrefix("http://") != true)
        }
        self.startedAt = startedAt
        self.latestMigration = latestMigration
        self.ipLimiter = configuration.rateLimits.perIP.map { RateLimiter(limit: $0) }
        self.pubkeyLimiter = configuration.rateLimits.perPubkey.map { RateLimiter(limit: $0) }
        self.trustForwardedFor = configuration.rateLimits.trustForwardedFor
        self.usedAuthorizations = UsedAuthorizations(window: .seconds(2 * configuration.authMaxSkewSeconds + 60))
        // The metrics hold the scrape hook, which holds these snapshots: they hold the metrics
        // weakly, or the three would keep each other alive.
        self.readiness = ThrottledSnapshot { [store, watcher, weak metrics] in
            metrics?.readinessChecked()
            let readiness = await Self.checkReadiness(store: store, watcher: watcher, latestMigration: latestMigration)
            metrics?.ready(readiness.0 == .ok)
            return readiness
        }
        let queue = DeliveryQueue(client: store.database.client, logger: store.logger)
        self.queueDepth = ThrottledSnapshot { try? await withDeadline(Self.readinessTimeout) { try await queue.depth() } }
        // Every scrape shows readiness and the queue as of the last second.
        metrics.onScrape { [readiness, queueDepth, weak metrics] in
            _ = await readiness.value()
            if let depth = await queueDepth.value() { metrics?.queue(depth) }
        }
    }

    /// Reads the body within the size limit; anything unreadable or too large is the app's 400.
    /// How long it may take is bounded per connection (`RequestDeadlineHandler`).
    static func readBody(_ request: inout Request) async throws(APIError) -> [UInt8] {
        do {
            let buffer = try await request.body.collect(upTo: maxBodyBytes)
            return Array(buffer.readableBytesView)
        } catch {
            throw .unreadableBody
        }
    }

    func authenticate(_ request: Request, body: [UInt8]) throws(APIError) -> VerifiedHTTPAuth {
        let query = request.uri.query.flatMap { $0.isEmpty ? nil : $0 }
        let facts = HTTPAuthRequest(method: request.method.rawValue, path: request.uri.path, query: query, body: body)
        do {
            return try verifier.verify(authorization: request.headers[.authorization], request: facts)
        } catch {
            throw .unauthorized(error.description, code: error.code)
        }
    }

    /// Body, then auth, then the route's parsing, then the per-pubkey limit, then the work. A
    /// request refused before the work has stored nothing, so its nonce is not used up.
    ///
    /// A replayed header must not use up its pubkey's budget. Once a header has had a final answer
    /// here (done, refused as replayed, or a 4xx that would only repeat), it is remembered and a
    /// copy is refused before the limiter is asked; a charge for one the database refuses as
    /// replayed (first seen here, or used at another instance) is given back.
    func signed<Parsed, Result>(
        _ request: inout Request, parse: ([UInt8]) throws(RequestBodyError) -> Parsed,
        perform: (VerifiedHTTPAuth, Parsed) async throws -> Result
    ) async throws -> Result {
        let body = try await Self.readBody(&request)
        let auth = try authenticate(request, body: body)
        let used = auth.pubkey.hex + " " + auth.replayKey
        guard !usedAuthorizations.contains(used) else { throw APIError.replayed }
        let parsed: Parsed
        do {
            parsed = try parse(body)
        } catch {
            usedAuthorizations.insert(used)
            throw APIError.badRequest(error)
        }
        if let pubkeyLimiter, let wait = pubkeyLimiter.take(auth.pubkey.hex) {
            metrics.rateLimited(scope: "pubkey")
            throw APIError.rateLimited(retryAfter: wait)
        }
        do {
            let result = try await perform(auth, parsed)
            usedAuthorizations.insert(used)
            return result
        } catch let error as APIError where error == .replayed {
            usedAuthorizations.insert(used)
            pubkeyLimiter?.refund(auth.pubkey.hex)
            throw error
        } catch let error as APIError where (400..<500).contains(error.status.code) {
            usedAuthorizations.insert(used)
            throw error
        }
    }

    /// `GET /v1/webpush/vapid-public-key`: the key a browser passes to `pushManager.subscribe` as
    /// `applicationServerKey` (65-byte point, base64url). 404 when Web Push is off.
    public func vapidPublicKey() async throws -> Response {
        guard let vapidKeys else { throw APIError(.notFound, "Web Push is not enabled on this gateway") }
        let key = try await store.storage { try await vapidKeys.current() }
        return JSONBody.response(.ok, ["public_key": .string(key.publicKey)])
    }

    public func register(_ request: inout Request) async throws -> Response {
        try await signed(&request, parse: RegisterDeviceRequest.parse) { auth, registration in
            let topic = registration.topic ?? defaultTopic
            guard topics.contains(topic) else { throw APIError.badRequest("unknown topic") }
            for relay in registration.relays {
                if let refusal = relayPolicy.refusal(for: relay) { throw APIError.badRequest("relays: \(relay) \(refusal)") }
            }
            // An endpoint is a URL the gateway will POST to: judged like a relay URL, so that a
            // registration cannot aim the gateway at its own network.
            if let endpoint = registration.destination.endpoint, let refusal = endpointHosts.policy.refusal(for: endpoint.host) {
                throw APIError.badRequest("endpoint \(refusal)")
            }
            let platform = registration.destination.platform
            guard platforms.contains(platform) else {
                throw APIError.badRequest("platform \(platform.rawValue) is not enabled on this gateway")
            }
            // Then by where its name leads now (the sender asks again before every send).
            if let endpoint = registration.destination.endpoint {
                try await Self.checkResolved(endpoint, by: endpointHosts)
            }
            // An app listed without an APNs key is on other platforms only: an iOS token for it
            // could never be pushed.
            if platform == .apns, keylessTopics.contains(topic) {
                throw APIError.badRequest("topic \(topic) has no APNs key on this gateway")
            }
            try await store.register(registration, topic: topic, auth: auth)
            var metadata: Logger.Metadata = [
                "nostr.pubkey": "\(auth.pubkey.hex)", "push.platform": "\(platform.rawValue)",
                "push.device": "\(DeviceToken.redacted(registration.deviceToken))", "push.relay_watch": "\(registration.relayWatch)",
            ]
            if case .apns(_, let environment, let kind) = registration.destination {
                metadata["apns.environment"] = "\(environment.rawValue)"
                metadata["apns.push_type"] = "\(kind.rawValue)"
            }
            store.logger.info("device registered", metadata: metadata)
            return JSONBody.response(.accepted, ["status": "registered"])
        }
    }

    /// Refuses an endpoint whose host resolves to a non-public address (400) or to none (400); a
    /// lookup that fails says nothing about the client's input, so it is a 503 to try again.
    static func checkResolved(_ endpoint: PushEndpoint, by hosts: EndpointHostCheck) async throws {
        switch await hosts.refusal(for: endpoint.host) {
        case .notPublic(let refusal)?: throw APIError.badRequest("endpoint \(refusal)")
        case .noAddress?: throw APIError.badRequest("endpoint host resolves to no address")
        case .lookupFailed?: throw APIError(.serviceUnavailable, "the endpoint's host could not be looked up; try again")
        case nil: return
        }
    }

    public func unregister(_ request: inout Request) async throws -> Response {
        try await signed(&request, parse: UnregisterDeviceRequest.parse) { auth, unregistration in
            try await store.unregister(deviceToken: unregistration.deviceToken, auth: auth)
            return JSONBody.response(.accepted, ["status": "unregistered"])
        }
    }

    public func archiveState(_ request: inout Request) async throws -> Response {
        try await signed(&request, parse: ArchiveStateRequest.parse) { auth, update in
            try await store.updateArchive(update, auth: auth)
            return JSONBody.response(.accepted, ["status": "synced"])
        }
    }

    public func push(_ request: inout Request) async throws -> Response {
        try await signed(&request, parse: PushRequest.parse) { auth, push in
            // Queued already claimed and sent from here while direct delivery has room (no claim
            // round trip); otherwise queued for the delivery loops, which the wake-up starts.
            let result = try await store.enqueue(
                push, auth: auth, skipRelayWatchDevices: watcher != nil, leaseSeconds: directDelivery?.lease())
            if result.overBudget > 0 { metrics.push(outcome: "over_budget", reason: nil, count: result.overBudget) }
            if !result.leased.isEmpty {
                directDelivery?.start(result.leased)
            } else if result.candidateDevices > 0 {
                wakeup?.signal()
            }
            return JSONBody.response(
                .accepted,
                [
                    "status": "accepted", "recipient_count": .integer(Int64(result.recipientCount)),
                    "candidate_devices": .integer(Int64(result.candidateDevices)),
                ])
        }
    }

    public func suppress(_ request: inout Request) async throws -> Response {
        try await signed(&request, parse: SuppressionRequest.parse) { auth, suppression in
            let stored = try await store.suppress(suppression, auth: auth)
            return JSONBody.response(.accepted, ["status": "suppressed", "suppressed": .integer(Int64(stored))])
        }
    }

    public func listDevices(_ request: inout Request) async throws -> Response {
        try await signed(&request, parse: Self.noBody) { auth, _ in
            let listing = try await store.devices(auth: auth, watchShards: watchSettings.shards)
            let devices = listing.devices
            let watch: JSONValue? =
                if watcher != nil { Self.watchObject(listing, settings: watchSettings, policy: relayPolicy) } else { Optional.none }
            let formatter = ISO8601DateFormatter()
            return JSONBody.response(
                .ok,
                [
                    "devices": .array(
                        devices.map { device in
                            var object: [String: JSONValue] = [
                                "platform": .string(device.platform), "topic": .string(device.topic),
                                "relay_watch": .bool(device.relayWatch), "relays": .array(device.relays.map { .string($0) }),
                                "registered_at": .string(formatter.string(from: device.registeredAt)),
                            ]
                            // An endpoint names the device as `endpoint`, as it was registered.
                            let isEndpoint =
                                device.platform == PushPlatform.webpush.rawValue || device.platform == PushPlatform.unifiedpush.rawValue
                            object[isEndpoint ? "endpoint" : "device_token"] = .string(device.deviceToken)
                            if let environment = device.environment {
                                object["apns_environment"] = .string(environment)
                                object["push_type"] = .string(device.pushType)
                            }
                            if device.relayWatch, let watch { object["watch"] = watch }
                            return .object(object)
                        }),
                    // Where this gateway takes gift wraps itself, for the caller's kind 10050 list.
                    "inbox_relay": inboxRelayURL.map { .string($0) } ?? .null,
                ])
        }
    }

    /// Where the caller's relay-watch devices are watched: the source of the relays (their kind
    /// 10050 list, else what they registered, else `RELAYS`) and each relay's state. The plan for
    /// this one user decides `refused` and the per-user `over-limit`; for the relays it watches,
    /// the watching instance's report says the rest (`watching` until it reports otherwise).
    static func watchObject(_ listing: DeviceListing, settings: WatchSettings, policy: RelayAddressPolicy) -> JSONValue {
        var user = RelayWatchPlan.UserRelays(inboxList: listing.inboxList.map { $0.compactMap { try? RelayURL($0) } })
        for device in listing.devices where device.relayWatch { user.addRegistered(device.relays) }
        let plan = RelayWatchPlan(
            users: ["caller": user], defaults: settings.relays, maxRelays: .max, maxRelaysPerUser: settings.maxRelaysPerUser,
            policy: policy, served: Set(settings.ownInboxRelay.map { [$0] } ?? []))
        guard let watch = plan.users["caller"] else { return .null }
        return .object([
            "source": .string(watch.source.rawValue),
            "relays": .array(
                watch.relays.map { assignment in
                    let state =
                        assignment.state == .watching ? listing.relayStates[assignment.url] ?? "watching" : assignment.state.rawValue
                    return .object(["url": .string(assignment.url), "state": .string(state)])
                }),
        ])
    }

    public func deleteAccount(_ request: inout Request) async throws -> Response {
        try await signed(&request, parse: Self.noBody) { auth, _ in
            let removed = try await store.deleteAccount(auth: auth)
            store.logger.info("account erased", metadata: ["nostr.pubkey": "\(auth.pubkey.hex)", "push.devices": "\(removed)"])
            return JSONBody.response(.ok, ["status": "deleted", "devices_removed": .integer(Int64(removed))])
        }
    }

    /// Routes without a body take whatever was sent (it is covered by the signature) and ignore it.
    static func noBody(_: [UInt8]) throws(RequestBodyError) {}

    /// `GET /metrics`: refreshes the queue gauges (at most once a second), then renders every metric.
    public func metricsExposition() async -> Response {
        let bytes = await metrics.exposition()
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// How long `/readyz` waits for the database: a probe must answer within its own timeout
    /// (Kubernetes' default is 1 s, our manifests give 2 s), so an unreachable database is a
    /// quick 503, not a hung request.
    static let readinessTimeout: Duration = .milliseconds(1500)

    /// `/readyz`: ready when the database answers and every known migration is applied. Answered
    /// from a snapshot refreshed at most once a second (`ThrottledSnapshot`), so probes cost the
    /// database one query a second however many arrive.
    public func ready() async -> Response {
        let (status, body) = await readiness.value()
        return JSONBody.response(status, body)
    }

    /// Every read of the refresh, the watcher's status included, is under the readiness timeout:
    /// probes wait on a refresh in flight, so it must not hang.
    static func checkReadiness(store: GatewayStore, watcher: RelayWatcher?, latestMigration: Int) async -> (
        HTTPResponse.Status, [String: JSONValue]
    ) {
        do {
            return try await withDeadline(Self.readinessTimeout) {
                let version = try await Migrator.currentVersion(client: store.database.client, logger: store.logger)
                guard let version, version >= latestMigration else {
                    return (.serviceUnavailable, ["status": "not ready", "error": "database not migrated"])
                }
                var body: [String: JSONValue] = ["status": "ready", "migration": .integer(Int64(version))]
                if let watcher { body["watch"] = Self.watchStatus(await watcher.status()) }
                return (.ok, body)
            }
        } catch {
            return (.serviceUnavailable, ["status": "not ready", "error": "database unreachable"])
        }
    }

    /// Whether two secrets are equal, in time that depends on neither: their SHA-256 digests are
    /// compared, so not even the length of the expected one shows.
    static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        let x = SHA256.hash(data: Array(a.utf8)), y = SHA256.hash(data: Array(b.utf8))
        var difference: UInt8 = 0
        for (p, q) in zip(x, y) { difference |= p ^ q }
        return difference == 0
    }
}

/// The routes, for `buildApplication` and for tests that drive the router directly.
public func buildRouter(api: GatewayAPI) -> Router<GatewayRequestContext> {
    let router = Router(context: GatewayRequestContext.self)
    router.add(middleware: RequestMetricsMiddleware(metrics: api.metrics))
    if let limiter = api.ipLimiter {
        router.add(middleware: RateLimitMiddleware(limiter: limiter, trustForwardedFor: api.trustForwardedFor, metrics: api.metrics))
    }
    router.add(middleware: CanonicalPathMiddleware())
    router.get("/healthz") { _, _ in JSONBody.response(.ok, ["status": "ok"]) }
    router.get("/readyz") { _, _ in await api.ready() }
    router.get("/metrics") { _, _ in await api.metricsExposition() }
    router.get("/openapi.yaml") { _, _ in
        Response(
            status: .ok, headers: [.contentType: "application/yaml"], body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.yaml)))
    }
    router.post("/v1/devices/register") { request, _ in
        var request = request
        return try await api.register(&request)
    }
    router.post("/v1/devices/unregister") { request, _ in
        var request = request
        return try await api.unregister(&request)
    }
    router.put("/v1/conversations/archive-state") { request, _ in
        var request = request
        return try await api.archiveState(&request)
    }
    router.post("/v1/push") { request, _ in
        var request = request
        return try await api.push(&request)
    }
    router.post("/v1/suppressions") { request, _ in
        var request = request
        return try await api.suppress(&request)
    }
    router.get("/v1/webpush/vapid-public-key") { _, _ in try await api.vapidPublicKey() }
    router.get("/v1/devices") { request, _ in
        var request = request
        return try await api.listDevices(&request)
    }
    router.delete("/v1/account") { request, _ in
        var request = request
        return try await api.deleteAccount(&request)
    }
    router.get("/admin/status") { request, _ in try await api.adminStatus(request) }
    router.get("/admin") { request, _ in try await api.console(request) }
    router.post("/admin/login") { request, context in
        var request = request
        return try await api.signIn(&request, context: context)
    }
    router.post("/admin/logout") { request, _ in try api.signOut(request) }
    return router
}
