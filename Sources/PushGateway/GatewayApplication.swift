import Foundation
import GatewayWire
public import Hummingbird
import HummingbirdCore
public import Logging
import NIOCore
public import PostgresNIO
import ServiceLifecycle

/// Builds the gateway: a PostgreSQL client (a service), migrations applied before the server
/// starts (unless disabled), and the HTTP server. `runService()` handles SIGTERM/SIGINT with a
/// graceful shutdown.
public enum GatewayApplication {
    public static func postgresClient(_ url: DatabaseURL, logger: Logger) -> PostgresClient {
        PostgresClient(configuration: postgresConfiguration(url), backgroundLogger: logger)
    }

    /// The connections `POST /v1/devices/register` writes on (`GatewayStore`): as many as the
    /// registration groups in flight (`RegistrationBatcher.defaultConcurrentGroups`), each planning
    /// `RegisterDevicesStatement` once (`plan_cache_mode = force_generic_plan`). On the shared
    /// connections PostgreSQL planned it afresh on about half the calls, each plan (~0.6 ms)
    /// costing about as much as running the group: a custom plan knows the group's size, and for
    /// groups of under 10 (most of them, when this was measured with two groups in flight at once)
    /// it looks cheaper than the generic plan, which guesses 10 rows an array. The generic plan is the one `DevicePlanTests` checks under every statistics.
    /// Only the statements a registration runs go through these connections; the claims, which
    /// are planned for their values on purpose, keep the shared ones.
    public static func registrationClient(_ url: DatabaseURL, logger: Logger) -> PostgresClient {
        var configuration = postgresConfiguration(url)
        configuration.options.maximumConnections = RegistrationBatcher.defaultConcurrentGroups
        configuration.options.additionalStartupParameters.append(("plan_cache_mode", "force_generic_plan"))
        return PostgresClient(configuration: configuration, backgroundLogger: logger)
    }

    package static func postgresConfiguration(_ url: DatabaseURL) -> PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: url.host, port: url.port, username: url.username, password: url.password, database: url.database,
            tls: url.tls == .disable
                ? .disable : (url.tls == .require ? .require(.makeClientConfiguration()) : .prefer(.makeClientConfiguration())))
        configuration.options.maximumConnections = 40
        // No keep-alive pings: the pool arms a keep-alive timer every time a connection goes idle,
        // which at thousands of queries a second cost more CPU than the queries' own handling.
        // A connection that died while idle fails its next query, which every caller retries.
        configuration.options.keepAliveBehavior = nil
        // No JIT: our statements are short and planned once per connection, and a generic plan's
        // row estimates (a CTE is guessed at 200 rows, a device look-up at the whole table) pass
        // the JIT cost thresholds once `devices` holds tens of thousands of rows. PostgreSQL then
        // compiled a 500-recipient push for ~2.4 s on every execution (seen with auto_explain).
        configuration.options.additionalStartupParameters = [("jit", "off")]
        return configuration
    }

    /// `deliver: false` builds an API-only instance (tests that inspect the queue, or an operator
    /// splitting roles). Throws when the APNs client cannot be set up (unreadable CA file, bad key).
    public static func build(
        configuration: GatewayConfiguration, migrator: Migrator, migrateOnStart: Bool = true, deliver: Bool = true,
        metrics: GatewayMetrics = GatewayMetrics(), logger: Logger
    ) throws -> some ApplicationProtocol {
        if configuration.apns.disabled && (configuration.fcm.enabled || configuration.webPush.enabled) {
            logger.warning("APNS_DISABLE=1: the pushes of every platform, FCM and Web Push included, are only logged, never sent")
        }
        if configuration.publicURL == nil {
            logger.warning(
                "PUBLIC_URL is not set: standard NIP-98 auth is refused (its u tag cannot be checked); the linkstr dialect works")
        }
        let client = postgresClient(configuration.database, logger: logger)
        let registrationClient = registrationClient(configuration.database, logger: logger)
        let store = GatewayStore(
            client: client, registrationClient: registrationClient, logger: logger, replayWindowSeconds: configuration.authMaxSkewSeconds,
            maxDevicesPerPubkey: configuration.maxDevicesPerPubkey, deviceBudget: configuration.deviceBudget)
        let queue = DeliveryQueue(client: client, logger: logger)
        let wakeup = WakeupSignal(interval: .milliseconds(200))
        var services: [any Service] = [client, registrationClient]
        let vapidKeys =
            configuration.webPush.enabled
            ? VAPIDKeyStore(database: Database(client), configured: configuration.webPush.privateKey, logger: logger) : nil
        let worker =
            deliver
            ? try deliveryWorker(
                configuration: configuration, queue: queue, vapidKeys: vapidKeys, wakeup: wakeup, metrics: metrics, logger: logger,
                services: &services)
            : nil
        let direct = worker?.direct
        var watcher: RelayWatcher?
        if configuration.watch.enabled {
            watcher = RelayWatcher(
                store: WatchStore(
                    client: client, settings: configuration.watchSettings, deviceBudget: configuration.deviceBudget, logger: logger),
                metrics: metrics, logger: logger,
                wakeup: wakeup, directDelivery: direct)
        }
        let inbox =
            configuration.inbox.enabled
            ? InboxRelay(
                settings: configuration.inbox, client: client, watch: configuration.watch, deviceBudget: configuration.deviceBudget,
                metrics: metrics, logger: logger, wakeup: wakeup, directDelivery: direct,
                trustForwardedFor: configuration.rateLimits.trustForwardedFor)
            : nil
        let api = GatewayAPI(
            store: store, configuration: configuration, latestMigration: migrator.latestVersion, metrics: metrics, watcher: watcher,
            inbox: inbox, vapidKeys: vapidKeys, wakeup: wakeup, directDelivery: direct)
        // The services that query our tables start once the migrations are in (see StartGate);
        // the PostgreSQL client and the APNs connections run from the start.
        let migrated = StartGate()
        if !migrateOnStart { migrated.open() }
        services.append(StartsAfterGate(gate: migrated, service: MaintenanceService(store: store, queue: queue, logger: logger)))
        if let worker { services.append(StartsAfterGate(gate: migrated, service: worker)) }
        if let watcher { services.append(StartsAfterGate(gate: migrated, service: watcher)) }
        if let inbox { services.append(StartsAfterGate(gate: migrated, service: inbox)) }
        var app = application(router: buildRouter(api: api), configuration: configuration, services: services, logger: logger)
        if migrateOnStart {
            app.beforeServerStarts {
                try await migrator.migrate(client: client, logger: logger)
                migrated.open()
            }
        }
        return app
    }

    /// The worker, with the direct path (jobs handed over without a queue round trip) when
    /// `DELIVERY_DIRECT_LIMIT` allows one, and a transport per enabled platform. The connections
    /// the transports keep are closed by services appended to `services`.
    private static func deliveryWorker(
        configuration: GatewayConfiguration, queue: DeliveryQueue, vapidKeys: VAPIDKeyStore?, wakeup: WakeupSignal,
        metrics: GatewayMetrics, logger: Logger, services: inout [any Service]
    ) throws -> DeliveryWorker {
        // `APNS_DISABLE=1`: every platform's sender only logs. Otherwise each transport's
        // connections are closed by a service listed before the worker (services stop in reverse
        // order, so the connections close last).
        func transport<Sender: PushSender>(_ make: () throws -> Sender, shutdown: @escaping @Sendable (Sender) async -> Void) rethrows
            -> any PushSender
        {
            guard !configuration.apns.disabled else { return LoggingPushSender(logger: logger) }
            let sender = try make()
            services.append(TransportShutdownService { await shutdown(sender) })
            return sender
        }
        var transports: [PushPlatform: any PushSender] = [
            .apns: try transport(
                { try HTTP2APNsSender(configuration: configuration.apns, metrics: metrics, logger: logger) },
                shutdown: { await $0.shutdown() })
        ]
        if let vapidKeys {
            let webPush = try transport(
                { try WebPushSender(settings: configuration.webPush, keys: vapidKeys, logger: logger) }, shutdown: { await $0.shutdown() })
            // A UnifiedPush distributor takes the same request as a Web Push service.
            transports[.webpush] = webPush
            transports[.unifiedpush] = webPush
        }
        if configuration.fcm.enabled {
            transports[.fcm] = try transport(
                { try FCMSender(settings: configuration.fcm, logger: logger) }, shutdown: { await $0.shutdown() })
        }
        var worker = DeliveryWorker(
            queue: queue, sender: PushRouter(transports, alerts: configuration.alerts), settings: configuration.delivery, metrics: metrics,
            logger: logger,
            wakeup: wakeup)
        if configuration.delivery.directLimit > 0 {
            let sending = worker
            worker.direct = DirectDelivery(leaseSeconds: configuration.delivery.leaseSeconds, limit: configuration.delivery.directLimit) {
                jobs in
                await sending.process(jobs)
            }
        }
        return worker
    }

    private static func application(
        router: Router<GatewayRequestContext>, configuration: GatewayConfiguration, services: [any Service], logger: Logger
    ) -> Application<RouterResponder<GatewayRequestContext>> {
        // Every connection: its address's share of the connection cap, and a deadline per request.
        let perAddress = configuration.http.maxConnectionsPerAddress.map { ConnectionsPerAddress(limit: $0) }
        let requestLimit = TimeAmount.seconds(Int64(configuration.http.requestTimeoutSeconds))
        let perConnection: @Sendable () -> [any RemovableChannelHandler] = {
            (perAddress.map { [$0.handler()] } ?? []) + [RequestDeadlineHandler(limit: requestLimit)]
        }
        return Application(
            router: router,
            server: .http1(
                configuration: .init(
                    additionalChannelHandlers: perConnection(), idleTimeout: .seconds(Int64(configuration.http.idleTimeoutSeconds)))),
            configuration: .init(
                address: .hostname(configuration.listenHost, port: configuration.listenPort), serverName: "linkstr-push",
                availableConnectionsDelegate: MaximumAvailableConnections(configuration.http.maxConnections, logger: logger)),
            services: services,
            logger: logger)
    }
}

/// Prunes expired replay keys, old dedupe rows and expired jobs every few minutes.
struct MaintenanceService: Service {
    let store: GatewayStore
    let queue: DeliveryQueue
    let logger: Logger
    var interval: Duration = .seconds(300)

    func run() async throws {
        // A graceful shutdown cancels the sleep, so the service ends at once.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try await Task.sleep(for: interval)
                do {
                    let removed = try await store.prune() + queue.dropExpired()
                    logger.debug("pruned expired rows", metadata: ["db.rows": "\(removed)"])
                } catch {
                    logger.warning("prune failed", metadata: ["error.type": "\(type(of: error))"])
                }
            }
        }
    }
}
