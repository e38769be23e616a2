import Crypto
import Foundation
import NostrProtocol
import PushGateway
import TestSupport
import Testing

/// A push endpoint is refused at registration by where its name leads, not only by how its URL
/// reads. The real `linkstr-push` binary resolves names through the C library as in production;
/// nss_wrapper (`libnss-wrapper`, which scripts/test.sh installs) makes the library answer from
/// this test's hosts file, so that names can lead to private networks without a DNS server.
@Suite(.serialized) struct EndpointAddressProcessTests {
    static let hosts = """
        10.20.30.40 push.private-network.test
        127.0.0.1 push.loopback.test
        169.254.169.254 push.metadata.test
        93.184.216.34 push.mixed.test
        10.0.0.7 push.mixed.test
        93.184.216.34 push.public.test
        """

    @Test func anEndpointWhoseNameResolvesIntoAPrivateNetworkIsRefusedAndNothingIsStored() async throws {
        let library = "/usr/lib/\(Self.multiarch)/libnss_wrapper.so"
        try #require(FileManager.default.fileExists(atPath: library), "libnss-wrapper is not installed (scripts/test.sh installs it)")
        let hostsFile = FileManager.default.temporaryDirectory.appendingPathComponent("linkstr-hosts-\(UUID().uuidString)").path
        try Self.hosts.write(toFile: hostsFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: hostsFile) }
        try await TestDatabase.with { url, database in
            try await SandboxFixture.with { sandbox in
                let gateway = try await GatewayProcess.start(
                    database: url, sandbox: sandbox,
                    environment: [
                        "VAPID_SUBJECT": "mailto:ops@example.com", "LD_PRELOAD": library, "NSS_WRAPPER_HOSTS": hostsFile,
                    ])
                defer { gateway.kill() }
                let alice = Keys.generate()
                let refused: [(host: String, message: String)] = [
                    ("push.private-network.test", "endpoint resolves to a non-public address"),
                    ("push.loopback.test", "endpoint resolves to a non-public address"),
                    ("push.metadata.test", "endpoint resolves to a non-public address"),
                    // One public and one private address: some connections would reach the private one.
                    ("push.mixed.test", "endpoint resolves to a non-public address"),
                    ("push.nowhere.test", "endpoint host resolves to no address"),
                ]
                for (host, message) in refused {
                    for body in Self.bodies(host) {
                        let answer = try await gateway.request(alice, "POST", "/v1/devices/register", json: body)
                        #expect(answer.status == 400, "\(body): \(answer.body)")
                        #expect(answer.body.contains(#""error":"\#(message)""#), "\(body): \(answer.body)")
                    }
                }
                #expect(try await TestDatabase.count(database, "SELECT count(*)::int FROM devices") == 0, "nothing refused was stored")

                // The same bodies with a name that leads to the public internet are taken.
                for body in Self.bodies("push.public.test") {
                    let answer = try await gateway.request(Keys.generate(), "POST", "/v1/devices/register", json: body)
                    #expect(answer.status == 202, "\(body): \(answer.body)")
                }
                #expect(try await TestDatabase.count(database, "SELECT count(*)::int FROM devices") == 2)
                #expect(await gateway.stop(), "graceful shutdown")
            }
        }
    }

    /// A Web Push and a UnifiedPush registration naming `host`.
    static func bodies(_ host: String) -> [String] {
        let p256dh = Base64URL.encode(P256.KeyAgreement.PrivateKey().publicKey.x963Representation)
        let keys = #"{"p256dh":"\#(p256dh)","auth":"\#(Base64URL.encode([UInt8](repeating: 7, count: 16)))"}"#
        return [
            #"{"platform":"webpush","subscription":{"endpoint":"https://\#(host)/wpush/v2/abc","keys":\#(keys)}}"#,
            #"{"platform":"unifiedpush","endpoint":"https://\#(host)/UP?token=abc"}"#,
        ]
    }

    static var multiarch: String {
        #if arch(arm64)
            "aarch64-linux-gnu"
        #else
            "x86_64-linux-gnu"
        #endif
    }
}
