import Foundation
import HTTPTypes
import HummingbirdTesting
import NostrProtocol
import PushGateway
import TestSupport
import Testing

/// The operator console as an operator sees it: Debian's headless Chromium signs in through the
/// form of a gateway that has delivered through the APNs sandbox and watches a real relay, reads
/// the figures from the DOM, and checks the page at a desktop window's and a phone's width
/// (scripts/browser/console_check.py).
@Suite struct ConsoleBrowserTests {
    static func number(_ value: JSONValue?) -> Double {
        switch value {
        case .integer(let integer)?: Double(integer)
        case .double(let double)?: double
        default: 0
        }
    }

    @Test func chromiumSignsInAndReadsTheLiveFiguresAtDesktopAndPhoneWidths() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver"), "run scripts/test.sh: it installs chromium-driver")
        let relay = try RelayFixture()
        try await relay.start()
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns, watch: RelayWatchTests.settings([relay])) { gateway in
                let alice = Keys.generate(), bob = Keys.generate(), carol = Keys.generate(), dave = Keys.generate()
                // Bob is watched on the relay (typed pushes skip him); dave takes typed pushes.
                try await RelayWatchTests.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xD1))
                try await gateway.send(
                    dave, .post, "/v1/devices/register", json: GatewayHarness.registerBody(HTTP2DeliveryTests.token(0xD3)))
                // Carol's token is one the sandbox refuses (BadDeviceToken): a failure to show.
                try await gateway.send(
                    carol, .post, "/v1/devices/register", json: GatewayHarness.registerBody(HTTP2DeliveryTests.token(prefix: "0400", 0xD2)))
                #expect(
                    try await gateway.send(alice, .post, "/v1/push", json: ArchiveAndPushTests.pushBody(to: [bob, carol, dave])).status
                        == .accepted)
                #expect(try await RelayWatchTests.waitLive(gateway, pubkeys: 1))
                try await RelayWatchTests.publish([try RelayWatchTests.wrap(to: bob)], to: relay)
                #expect(try await GatewayHarness.eventually { RelayWatchTests.giftWrapDeliveries(sandbox).count == 1 })
                #expect(try await GatewayHarness.eventually { try await gateway.count("SELECT count(*)::int FROM push_queue") == 0 })
                // The figures are read at most once a second: let the drained queue show.
                try await Task.sleep(for: .milliseconds(1100))

                let output = FileManager.default.temporaryDirectory.appendingPathComponent("console-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: output) }
                let port = try #require(gateway.client.port)
                let (code, printed) = try await ChildProcess.run(
                    RustNostrPeer.python,
                    [
                        RustNostrPeer.repositoryRoot.appendingPathComponent("scripts/browser/console_check.py").path,
                        "http://127.0.0.1:\(port)", "admin-secret", output.path,
                    ], timeout: .seconds(120))
                try #require(code == 0, "\(printed.suffix(3000))")
                let json = try #require(printed.split(separator: "\n").last.map { try JSONValue(parsing: Array($0.utf8)) })
                #expect(json["signInForm"] == true)
                #expect(json["url"]?.stringValue?.hasSuffix("/admin") == true)
                #expect(json["signedOut"] == true)

                for view in ["desktop", "phone"] {
                    let page = try #require(json[view], "\(printed.suffix(3000))")
                    let fields = try #require(page["fields"])
                    #expect(fields["readiness"] == ["ready"], "\(view)")
                    #expect(fields["queue-queued"] == ["0"], "\(view)")
                    #expect(fields["watched-pubkeys"] == ["1"], "\(view)")
                    #expect(fields["relay-state"] == ["connected"], "\(view)")
                    #expect(page["refresh"] == "5" && page["scripts"] == 0, "\(view)")
                    // Two delivered (dave's typed push and bob's relay wrap), one device removed (carol's).
                    let outcomes = Dictionary(
                        uniqueKeysWithValues: (page["outcomes"]?.arrayValue ?? []).compactMap { row in
                            row["key"]?.stringValue.map { ($0, row["cells"]?.arrayValue?.compactMap(\.stringValue) ?? []) }
                        })
                    #expect(outcomes["delivered"]?[2] == "2", "\(view): \(outcomes)")
                    #expect(outcomes["device_removed"]?[2] == "1", "\(view): \(outcomes)")
                    #expect(page["sparklines"] == .integer(Int64(outcomes.count)))
                    #expect(page["relays"]?.arrayValue?.first?["key"]?.stringValue == relay.url)
                    #expect(fields["failure"]?.arrayValue?.count == 1, "\(view)")
                    // The page itself never needs a sideways scroll; text stays readable.
                    #expect(page["overflowing"] == [], "\(view): \(page)")
                    #expect(Self.number(page["scrollWidth"]) <= Self.number(page["clientWidth"]), "\(view): \(page)")
                    #expect(Self.number(page["smallestFontPx"]) >= 12, "\(view)")
                }
                #expect(json["phone"]?["innerWidth"] == 390)
                // The screenshots are real PNGs of the sizes asked for (the phone at 3x).
                for (name, width) in [("console-desktop.png", 1280), ("console-phone.png", 390 * 3)] {
                    let png = try Data(contentsOf: output.appendingPathComponent(name))
                    #expect(png.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), "\(name)")
                    let pixels = png.count >= 24 ? png[16..<20].reduce(0) { $0 << 8 | Int($1) } : 0
                    #expect(pixels == width, "\(name) is \(pixels) px wide")
                }
                if let keep = ProcessInfo.processInfo.environment["LINKSTR_KEEP_SCREENSHOTS"] {
                    for name in ["console-desktop.png", "console-phone.png"] {
                        try? FileManager.default.removeItem(atPath: keep + "/" + name)
                        try FileManager.default.copyItem(
                            at: output.appendingPathComponent(name), to: URL(fileURLWithPath: keep + "/" + name))
                    }
                }
            }
        }
    }
}
