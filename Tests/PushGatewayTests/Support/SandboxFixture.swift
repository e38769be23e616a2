import APNsSandbox
import Crypto
import Foundation
import Logging
import PushGateway

/// A real APNs sandbox (HTTP/2, TLS with a generated CA, provider-token checks) on a free
/// loopback port, and the gateway configuration that trusts and targets it.
struct SandboxFixture: Sendable {
    static let topic = GatewayHarness.topic
    static let keyID = "SANDBOXKEY"
    static let teamID = "TEAMSANDBX"

    let server: APNsSandboxServer
    let apns: APNsConfiguration
    let caFile: String
    let keyPEM: String

    var state: SandboxState { server.state }
    var url: String { "https://localhost:\(server.port)" }

    /// Runs `body` with a sandbox, closing it afterwards.
    static func with<T: Sendable>(
        maxConcurrentStreams: Int = 100, latencyMilliseconds: Int = 0, keyPEM: String? = nil,
        hostnames: [String] = ["localhost", "127.0.0.1", "::1"], _ body: @Sendable (SandboxFixture) async throws -> T
    ) async throws -> T {
        let key = try keyPEM.map { try P256.Signing.PrivateKey(pemRepresentation: $0) } ?? P256.Signing.PrivateKey()
        var configuration = SandboxConfiguration()
        configuration.port = 0
        configuration.maxConcurrentStreams = maxConcurrentStreams
        configuration.latencyMilliseconds = latencyMilliseconds
        configuration.allowedTopics = [topic]
        configuration.providerKeys = [ProviderKey(keyID: keyID, teamID: teamID, publicKey: key.publicKey)]
        let certificate = try SandboxCertificate.generate(hostnames: hostnames)
        let caFile = FileManager.default.temporaryDirectory.appendingPathComponent("sandbox-ca-\(UUID().uuidString).pem").path
        try certificate.caPEM!.write(toFile: caFile, atomically: true, encoding: .utf8)
        let server = try await APNsSandboxServer.start(configuration: configuration, certificate: certificate, logger: TestDatabase.logger)
        let url = "https://localhost:\(server.port)"
        let apns = APNsConfiguration(
            disabled: false, apps: [APNsApp(topic: topic, keyID: keyID, teamID: teamID, privateKeyPEM: key.pemRepresentation)],
            defaultTopic: topic, productionURL: url, sandboxURL: url, caFile: caFile)
        let fixture = SandboxFixture(server: server, apns: apns, caFile: caFile, keyPEM: key.pemRepresentation)
        do {
            let result = try await body(fixture)
            try await server.close()
            try? FileManager.default.removeItem(atPath: caFile)
            return result
        } catch {
            try? await server.close()
            try? FileManager.default.removeItem(atPath: caFile)
            throw error
        }
    }

    /// Answered pushes with status 200.
    func delivered() -> [DeliveryRecord] { state.records(status: 200) }

    /// The FCM settings that send to this sandbox's FCM face with its own service account (whose
    /// `token_uri` names the face).
    var fcm: FCMSettings {
        get throws {
            FCMSettings(
                serviceAccount: try FCMServiceAccount(json: state.fcm.serviceAccountJSON(origin: url)), apiURL: url + "/fcm",
                caFile: caFile)
        }
    }

    /// The service account key file, written for a process (firebase-admin, a gateway binary).
    func writeServiceAccount() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fcm-account-\(UUID().uuidString).json").path
        try state.fcm.serviceAccountJSON(origin: url).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The APNs settings for this sandbox with another transport.
    func apns(_ transport: APNsTransportKind) -> APNsConfiguration {
        var configuration = apns
        configuration.transport = transport
        return configuration
    }
}
