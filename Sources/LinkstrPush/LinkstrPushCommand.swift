import ArgumentParser
import AsyncHTTPClient
import Foundation
import Hummingbird
import Logging
import Metrics
import NIOHTTP1
import NostrProtocol
import PostgresNIO
import PushGateway

@main
struct LinkstrPushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "linkstr-push",
        abstract: "The linkstr push gateway: signed device registration in PostgreSQL and APNs delivery.",
        subcommands: [ServeCommand.self, MigrateCommand.self, AdminCommand.self, SignRequestCommand.self]
    )
}

/// Reads configuration and sets up logging; a bad setting exits with the key it concerns.
func loadConfiguration() throws -> (GatewayConfiguration, Logger) {
    let configuration: GatewayConfiguration
    do {
        configuration = try GatewayConfiguration.fromEnvironment(GatewayConfiguration.environment())
    } catch {
        throw ValidationError("configuration: \(error)")
    }
    let format = configuration.logFormat
    LoggingSystem.bootstrap { label in
        format == .json ? JSONLogHandler(label: label) as any LogHandler : StreamLogHandler.standardOutput(label: label)
    }
    var logger = Logger(label: "linkstr-push")
    logger.logLevel = configuration.logLevel
    return (configuration, logger)
}

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve", abstract: "Run the HTTP service (applies pending migrations first).")

    @Flag(help: "Do not apply migrations at start (run `linkstr-push migrate` separately).") var noMigrate = false

    func run() async throws {
        let tunedMalloc = MallocTuning.apply(environment: ProcessInfo.processInfo.environment)
        let (configuration, logger) = try loadConfiguration()
        let migrator = try Migrator.load(directory: Migrator.defaultDirectory())
        logger.info(
            "starting",
            metadata: [
                "http.listen": "\(configuration.listenHost):\(configuration.listenPort)", "db.url": "\(configuration.database.redacted)",
                "apns.disabled": "\(configuration.apns.disabled)",
                "apns.topics": "\(configuration.apns.topics.sorted().joined(separator: ","))",
                "malloc.mmap_threshold": "\(tunedMalloc ? "\(MallocTuning.mmapThresholdBytes)" : "unchanged")",
            ])
        // One registry for ours and the libraries' metrics (swift-metrics users such as Hummingbird).
        let metrics = GatewayMetrics()
        MetricsSystem.bootstrap(metrics.factory)
        let app = try GatewayApplication.build(
            configuration: configuration, migrator: migrator, migrateOnStart: !noMigrate, metrics: metrics, logger: logger)
        try await GracefulShutdownRunner.run([app], timeout: .seconds(configuration.shutdownTimeoutSeconds), logger: logger)
    }
}

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Apply pending migrations from migrations/*.sql and exit.")

    func run() async throws {
        let (configuration, logger) = try loadConfiguration()
        let migrator = try Migrator.load(directory: Migrator.defaultDirectory())
        let client = GatewayApplication.postgresClient(configuration.database, logger: logger)
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await client.run() }
            let applied = try await migrator.migrate(client: client, logger: logger)
            print(
                applied.isEmpty
                    ? "database is up to date (version \(migrator.latestVersion))"
                    : "applied migrations: \(applied.map(String.init).joined(separator: ", "))")
            group.cancelAll()
        }
    }
}

struct AdminCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "admin", abstract: "Administer a running instance.", subcommands: [Status.self])

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print /admin/status of a running instance.")
        @Option(help: "Base URL of the instance.") var url = "http://127.0.0.1:8787"
        @Option(help: "Admin token (default: ADMIN_TOKEN from the environment).") var token: String?

        func run() async throws {
            guard let token = token ?? ProcessInfo.processInfo.environment["ADMIN_TOKEN"] else {
                throw ValidationError("an admin token is needed: --token or ADMIN_TOKEN")
            }
            var request = HTTPClientRequest(url: url + "/admin/status")
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 1 << 20)
            print(String(buffer: body))
            if response.status != .ok { throw ExitCode(1) }
        }
    }
}

struct SignRequestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign-request",
        abstract: "Print an Authorization header (linkstr dialect) for a request, for curl.",
        discussion: """
            Example:
              BODY='{"device_token":"<64+ hex>","apns_environment":"sandbox"}'
              curl -X POST http://127.0.0.1:8787/v1/devices/register -H "content-type: application/json" \\
                -H "Authorization: $(linkstr-push sign-request --nsec $NSEC --method POST --path /v1/devices/register --body "$BODY")" \\
                -d "$BODY"
            """)

    @Option(help: "Secret key (nsec1… or hex). Default: LINKSTR_NSEC from the environment.") var nsec: String?
    @Option(help: "HTTP method.") var method = "POST"
    @Option(help: "Request path, for example /v1/devices/register.") var path: String
    @Option(help: "The exact request body.") var body = ""

    func run() throws {
        guard let secret = nsec ?? ProcessInfo.processInfo.environment["LINKSTR_NSEC"] else {
            throw ValidationError("a secret key is needed: --nsec or LINKSTR_NSEC")
        }
        let keys: Keys
        do { keys = Keys(secretKey: try SecretKey(parsing: secret)) } catch { throw ValidationError("invalid secret key: \(error)") }
        print(HTTPAuth.headerValue(for: HTTPAuth.linkstrEvent(keys: keys, method: method, path: path, body: Array(body.utf8))))
    }
}
