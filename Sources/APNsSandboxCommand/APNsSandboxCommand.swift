import APNsSandbox
import ArgumentParser
import Crypto
import Foundation
import Logging
import NostrProtocol
import ServiceLifecycle
import UnixSignals

/// `apns-sandbox`: a local stand-in for Apple's push service, for development, tests and load runs.
@main
struct APNsSandboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-sandbox",
        abstract:
            "Look-alikes of APNs, FCM and a Web Push service on one port: HTTP/2 over TLS, credential checks, scripted failures, a record of every push.",
        discussion: """
            Scripted failures by device-token prefix: 0400 BadDeviceToken; 0403 ExpiredProviderToken once; \
            0410 Unregistered (timestamp now); 0411 Unregistered (timestamp an hour ago); 0429N 429 N times; \
            0500N 500 N times (N one hex digit). Own endpoints: GET /deliveries[?after=N&status=S], \
            DELETE /deliveries, GET /stats, GET /healthz, POST /control/max-streams?value=N (sends the new \
            stream limit to open connections and uses it for new ones), POST /control/goaway?after=N (when the \
            N-th push from now opens, its connection sends GOAWAY and drops the streams it has not answered). \
            FCM face under /fcm/: POST /fcm/token (JWT-bearer exchange), POST /fcm/v1/projects/<project>/messages:send, \
            GET|DELETE /fcm/deliveries, GET /fcm/stats, POST /fcm/control/revoke-tokens, GET /fcm/service-account; \
            scripted by token prefix: unregistered, invalid, mismatch, thirdparty, quotaN, unavailableN, internalN, stall. \
            Web Push face under /webpush/: POST /webpush/subscriptions[?answer=S&times=N&retry_after=S&plain=1&stall=1], \
            POST /webpush/push/<id>, GET|DELETE /webpush/deliveries.
            """)

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on (0 picks one; see --port-file).") var port = 2197
    @Option(help: "Write the bound port to this file once listening.") var portFile: String?
    @Option(help: "SETTINGS_MAX_CONCURRENT_STREAMS advertised to clients.") var maxStreams = 1000
    @Option(help: "Accept provider tokens from this key id (with --team-id and --key).") var keyID: String?
    @Option(help: "The key's team id.") var teamID: String?
    @Option(help: "PEM file with the .p8 private key or its public key.") var key: String?
    @Flag(help: "Create --key as a new .p8 (ES256) private key if the file does not exist (for local set-ups).") var createKey = false
    @Option(
        help:
            "A gateway APPS_FILE or APNS_APPS_FILE (JSON list of topic, key_id, team_id, key_path): accept each key, and only these topics."
    )
    var appsFile: String?
    @Option(help: "Accept only this topic (repeatable; default: any).") var topic: [String] = []
    @Option(help: "Delay every push answer by this many milliseconds.") var latencyMs = 0
    @Option(help: "Append every push answer to this JSON-lines file.") var deliveries: String?
    @Option(help: "Keep this many records for GET /deliveries.") var keep = 1_000_000
    @Option(help: "TLS certificate chain (PEM). Without it a CA and certificate are generated.") var certificate: String?
    @Option(help: "TLS private key (PEM), with --certificate.") var certificateKey: String?
    @Option(help: "Write the generated CA here, for the gateway's APNS_CA_FILE.") var caOut: String?
    @Option(
        name: .customLong("hostname"),
        help: "Another name the generated certificate is valid for (repeatable), e.g. a container's service name.")
    var hostnames: [String] = []
    @Option(help: "The FCM face's project id.") var fcmProject = "linkstr-sandbox"
    @Option(help: "Write the FCM face's service account key file here once listening (for FCM_SERVICE_ACCOUNT_FILE).")
    var fcmServiceAccount: String?
    @Option(help: "Log level: trace, debug, info, notice, warning, error.") var logLevel = "info"

    func run() async throws {
        var logger = Logger(label: "apns-sandbox")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info

        var configuration = SandboxConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.maxConcurrentStreams = maxStreams
        configuration.latencyMilliseconds = latencyMs
        configuration.deliveriesFile = deliveries
        configuration.keepRecords = keep
        configuration.allowedTopics = Set(topic)
        configuration.fcmProjectID = fcmProject
        if createKey {
            guard let key else { throw ValidationError("--create-key needs --key") }
            if !FileManager.default.fileExists(atPath: key) {
                guard
                    FileManager.default.createFile(
                        atPath: key, contents: Data(P256.Signing.PrivateKey().pemRepresentation.utf8),
                        attributes: [.posixPermissions: 0o600])
                else { throw ValidationError("cannot write \(key)") }
            }
        }
        if let keyID, let teamID, let key {
            configuration.providerKeys.append(try ProviderKey(keyID: keyID, teamID: teamID, pem: try read(key)))
        } else if keyID != nil || teamID != nil || key != nil {
            throw ValidationError("--key-id, --team-id and --key go together")
        }
        if let appsFile {
            guard case .array(let apps)? = try? JSONValue(parsing: try read(appsFile)) else {
                throw ValidationError("\(appsFile): not a JSON list")
            }
            for app in apps {
                guard let topic = app["topic"]?.stringValue else { throw ValidationError("\(appsFile): each entry needs a topic") }
                // An APPS_FILE entry without an APNs key is an app on other platforms only.
                guard let keyID = app["key_id"]?.stringValue, let teamID = app["team_id"]?.stringValue,
                    let keyPath = app["key_path"]?.stringValue
                else { continue }
                configuration.providerKeys.append(try ProviderKey(keyID: keyID, teamID: teamID, pem: try read(keyPath)))
                configuration.allowedTopics.insert(topic)
            }
        }

        let identity: SandboxCertificate
        if let certificate {
            guard let certificateKey else { throw ValidationError("--certificate needs --certificate-key") }
            identity = try SandboxCertificate.load(chainPath: certificate, keyPath: certificateKey)
        } else {
            var names = [host == "0.0.0.0" ? "localhost" : host] + hostnames + ["localhost", "127.0.0.1", "::1"]
            names = names.reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
            identity = try SandboxCertificate.generate(hostnames: names)
        }
        if let caOut {
            guard let ca = identity.caPEM else { throw ValidationError("--ca-out needs a generated certificate") }
            try ca.write(toFile: caOut, atomically: true, encoding: .utf8)
        }

        let server = try await APNsSandboxServer.start(configuration: configuration, certificate: identity, logger: logger)
        if let fcmServiceAccount {
            // The key file names this sandbox's token endpoint; a gateway elsewhere (a container)
            // overrides it with FCM_TOKEN_URL.
            let origin = "https://\(host == "0.0.0.0" ? "localhost" : host):\(server.port)"
            guard
                FileManager.default.createFile(
                    atPath: fcmServiceAccount, contents: Data(server.state.fcm.serviceAccountJSON(origin: origin).utf8),
                    attributes: [.posixPermissions: 0o600])
            else { throw ValidationError("cannot write \(fcmServiceAccount)") }
        }
        if let portFile { try String(server.port).write(toFile: portFile, atomically: true, encoding: .utf8) }
        let group = ServiceGroup(
            configuration: .init(services: [SandboxService(server: server)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }

    private func read(_ path: String) throws -> String {
        do { return try String(contentsOfFile: path, encoding: .utf8) } catch { throw ValidationError("cannot read \(path)") }
    }
}

/// Keeps the sandbox up until SIGTERM/SIGINT, then closes it.
struct SandboxService: Service {
    let server: APNsSandboxServer

    func run() async throws {
        try? await gracefulShutdown()
        try await server.close()
    }
}
