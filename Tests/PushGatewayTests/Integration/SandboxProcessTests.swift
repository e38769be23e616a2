import AsyncHTTPClient
import Foundation
import GatewayWire
import NIOCore
import NIOHTTP1
import NIOSSL
import NostrProtocol
import PushGateway
import TestSupport
import Testing

/// The `apns-sandbox` executable as `scripts/up.sh` runs it: the FCM service account file it
/// writes for local use works as the gateway's `FCM_SERVICE_ACCOUNT_FILE`, and the FCM face's
/// management routes answer over HTTPS.
@Suite(.serialized) struct SandboxProcessTests {
    @Test func theServiceAccountFileItWritesDeliversAndTheFCMRoutesAnswer() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sandbox-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (portFile, caFile, accountFile) = ("\(directory)/port", "\(directory)/ca.pem", "\(directory)/fcm-account.json")
        let sandbox = try ChildProcess(
            executable: try ChildProcess.builtProduct("apns-sandbox"),
            arguments: [
                "--port", "0", "--port-file", portFile, "--ca-out", caFile, "--fcm-service-account", accountFile,
                "--fcm-project", "local-project", "--log-level", "warning",
            ],
            logPath: "\(directory)/sandbox.log")
        defer { sandbox.kill() }
        #expect(await eventually { FileManager.default.fileExists(atPath: portFile) }, "the sandbox started")
        let port = try #require(Int((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? ""))
        let origin = "https://127.0.0.1:\(port)"

        // The key file: private to its owner, naming this sandbox's token endpoint.
        let attributes = try FileManager.default.attributesOfItem(atPath: accountFile)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let written = try String(contentsOfFile: accountFile, encoding: .utf8)
        let account = try FCMServiceAccount(json: written)
        #expect(account.projectID == "local-project")
        #expect(account.tokenURI == origin + "/fcm/token")

        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(caFile)]
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
        func get(_ path: String, method: HTTPMethod = .GET) async throws -> (status: UInt, json: JSONValue?) {
            var request = HTTPClientRequest(url: origin + path)
            request.method = method
            let response = try await http.execute(request, timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 1 << 20)
            return (response.status.code, try? JSONValue(parsing: Array(buffer: body)))
        }
        do {
            // The same key is served at GET /fcm/service-account.
            let served = try await get("/fcm/service-account")
            #expect(served.status == 200)
            #expect(served.json == (try JSONValue(parsing: Array(written.utf8))))

            // The gateway's own sender, configured from that file alone, exchanges a token and sends.
            let settings = FCMSettings(serviceAccount: account, apiURL: origin + "/fcm", caFile: caFile)
            let sender = try FCMSender(settings: settings, logger: TestDatabase.logger)
            let token = FCMDeliveryTests.token("local", 1)
            let result = await sender.send(FCMDeliveryTests.job(1, token: token))
            await sender.shutdown()
            #expect(result.outcome == .delivered, "\(result.status) \(result.reason ?? "")")

            // GET /fcm/deliveries shows the message as FCM got it; DELETE clears the record.
            let deliveries = try await get("/fcm/deliveries")
            #expect(deliveries.status == 200)
            let recorded = deliveries.json?.arrayValue ?? []
            #expect(recorded.count == 1, "\(recorded)")
            #expect(recorded.first?["token"] == JSONValue.string(token) && recorded.first?["status"] == 200)
            #expect(recorded.first?["message"]?["data"]?["event_id"] == "e1")
            #expect(try await get("/fcm/stats").json?["token_exchanges"] == 1)
            #expect(try await get("/fcm/deliveries", method: .DELETE).status == 200)
            #expect(try await get("/fcm/deliveries").json?.arrayValue?.isEmpty == true)
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
        sandbox.signal(SIGTERM)
        #expect(await eventually { !sandbox.isRunning }, "SIGTERM stops it")
    }
}
