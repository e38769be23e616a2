import Foundation
import NostrProtocol
import PushGateway
import TestSupport
import Testing

/// What an attacker on the open internet tries, against a real `linkstr-push` process (the
/// binary a user runs; in the release pass of scripts/test.sh, the release build).
@Suite(.serialized) struct AbuseProcessTests {
    /// Every spelling of a signed route the router might accept is charged to the per-address
    /// limit and refused: each one, flooded past the burst from its own address, sees 400 and
    /// then 429, never a handler.
    @Test func pathSpellingsCannotBypassThePerAddressLimit() async throws {
        try await TestDatabase.with { url, _ in
            try await SandboxFixture.with { sandbox in
                // A burst of 4, refilled once every 1,000 s: nothing refills during the test.
                let gateway = try await GatewayProcess.start(database: url, sandbox: sandbox, environment: ["RATE_LIMIT_IP": "0.001/4"])
                defer { gateway.kill() }
                let variants = [
                    "//v1/push", "/v1//push", "/v1/./push", "/v1/../v1/push", "/v1/%70ush", "/%76%31/push", "/v1/push/", "/v1/push/.",
                    "/v1/push%2F", "//v1//devices//register",
                ]
                for (index, path) in variants.enumerated() {
                    let source = "127.0.0.\(10 + index)"
                    var statuses: [Int] = []
                    for _ in 0..<6 { statuses.append(try RawHTTPClient.status(port: gateway.port, source: source, path: path)) }
                    #expect(statuses.prefix(4).allSatisfy { $0 == 400 }, "\(path) is refused as non-canonical: \(statuses)")
                    #expect(statuses.suffix(2) == [429, 429], "\(path) past the burst: \(statuses)")
                }
                // The canonical route still works from a fresh address (401: no signature), and the
                // probes an orchestrator polls are exempt in their exact spelling only.
                #expect(try RawHTTPClient.status(port: gateway.port, source: "127.0.0.60", path: "/v1/push") == 401)
                for _ in 0..<6 {
                    #expect(try RawHTTPClient.status(port: gateway.port, source: "127.0.0.61", method: "GET", path: "/healthz") == 200)
                }
                let probes = try (0..<6).map { _ in
                    try RawHTTPClient.status(port: gateway.port, source: "127.0.0.62", method: "GET", path: "//healthz")
                }
                #expect(probes.suffix(2) == [429, 429], "a non-canonical probe spelling is charged: \(probes)")
                let metrics = try await gateway.get("/metrics")
                #expect(metrics.body.contains(#"linkstr_rate_limited_total{scope="ip"}"#))
                #expect(await gateway.stop())
            }
        }
    }

    /// 300 clients that connect and then stall pin no memory, slow no one, and are closed by the
    /// server: a missing or partial head at HTTP_IDLE_TIMEOUT_SECONDS, a body trickled after its
    /// head at HTTP_REQUEST_TIMEOUT_SECONDS, whatever the route: a signed route, a probe that never
    /// reads its body, a request the path check refuses.
    @Test func halfOpenConnectionsPinNothingSlowNoOneAndAreClosed() async throws {
        try await TestDatabase.with { url, _ in
            try await SandboxFixture.with { sandbox in
                let gateway = try await GatewayProcess.start(
                    database: url, sandbox: sandbox,
                    environment: [
                        "HTTP_IDLE_TIMEOUT_SECONDS": "4", "HTTP_REQUEST_TIMEOUT_SECONDS": "3", "HTTP_MAX_CONNECTIONS_PER_ADDRESS": "0",
                    ])
                defer { gateway.kill() }
                let before = try #require(gateway.process.residentBytes)
                let stalls = [
                    "",
                    "POST /v1/push HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty",
                    "POST /v1/push HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n{\"notification_type\":",
                    "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 999999999\r\n\r\nx",
                    "POST //v1/push HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n{",
                ]
                var clients: [RawHTTPClient] = []
                for index in 0..<300 {
                    let client = try RawHTTPClient(port: gateway.port)
                    try client.write(stalls[index % stalls.count])
                    clients.append(client)
                }
                // Meanwhile everyone else is served as usual.
                for _ in 0..<20 { #expect(try await gateway.get("/healthz").status == 200) }
                let during = try #require(gateway.process.residentBytes)
                #expect(during - before < 48 << 20, "300 stalled connections cost \((during - before) >> 20) MB")
                // Keep trickling one byte of each body every second: it must not keep a connection.
                var open = Array(clients.indices)
                let deadline = ContinuousClock.now + .seconds(30)
                while !open.isEmpty, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .seconds(1))
                    open = open.filter { index in
                        if index % stalls.count >= 2 { try? clients[index].write(" ") }
                        return !clients[index].drain().closed
                    }
                }
                #expect(
                    open.isEmpty,
                    "\(open.count) of 300 stalled connections still open after 30 s: kinds \(Set(open.map { $0 % stalls.count }))")
                // A fresh connection: the shared client's pooled one sat idle past the gateway's 4 s
                // idle timeout, and reusing it as the gateway closes it fails on the client's side.
                #expect(try RawHTTPClient.status(port: gateway.port, method: "GET", path: "/healthz") == 200)
                #expect(await gateway.stop())
            }
        }
    }

    /// One address cannot take every connection: past HTTP_MAX_CONNECTIONS_PER_ADDRESS its new
    /// connections are closed at once, and another address is served.
    @Test func oneAddressGetsItsShareOfConnectionsOnly() async throws {
        try await TestDatabase.with { url, _ in
            try await SandboxFixture.with { sandbox in
                let gateway = try await GatewayProcess.start(
                    database: url, sandbox: sandbox, environment: ["HTTP_MAX_CONNECTIONS_PER_ADDRESS": "10"])
                defer { gateway.kill() }
                let held = try (0..<10).map { _ in try RawHTTPClient(port: gateway.port, source: "127.0.0.21") }
                try await Task.sleep(for: .milliseconds(300))
                #expect(held.allSatisfy { !$0.drain().closed }, "ten are allowed")
                let extra = try RawHTTPClient(port: gateway.port, source: "127.0.0.21")
                #expect(try await GatewayHarness.eventually(within: 5) { extra.drain().closed }, "the eleventh is closed at once")
                #expect(try RawHTTPClient.status(port: gateway.port, source: "127.0.0.22", method: "GET", path: "/healthz") == 200)
                // Once one closes, the address may connect again.
                held[0].hangUp()
                #expect(
                    try await GatewayHarness.eventually(within: 5) {
                        (try? RawHTTPClient.status(port: gateway.port, source: "127.0.0.21", method: "GET", path: "/healthz")) == 200
                    })
                #expect(await gateway.stop())
            }
        }
    }

    /// Past HTTP_MAX_CONNECTIONS the server stops accepting, and serves the next client as soon as
    /// a connection closes.
    @Test func theConnectionCapHoldsAndFreesUp() async throws {
        try await TestDatabase.with { url, _ in
            try await SandboxFixture.with { sandbox in
                let gateway = try await GatewayProcess.start(
                    database: url, sandbox: sandbox,
                    environment: [
                        "HTTP_MAX_CONNECTIONS": "20", "HTTP_IDLE_TIMEOUT_SECONDS": "10", "HTTP_MAX_CONNECTIONS_PER_ADDRESS": "0",
                    ])
                defer { gateway.kill() }
                // Wait out the start-up probes' connections, so the 20 below are all there are. The
                // idle timeout is long enough that the 20 outlast the test's own steps on a busy machine.
                try await Task.sleep(for: .seconds(11))
                let idle = try (0..<20).map { _ in try RawHTTPClient(port: gateway.port) }
                try await Task.sleep(for: .milliseconds(300))
                let waiting = try RawHTTPClient(port: gateway.port)
                try waiting.write("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                try await Task.sleep(for: .seconds(1))
                #expect(waiting.drain().received.isEmpty, "the 21st connection is not served while 20 are open")
                var answer: [UInt8] = []
                let deadline = ContinuousClock.now + .seconds(40)
                while !String(decoding: answer, as: UTF8.self).contains("\r\n"), ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(200))
                    answer += waiting.drain().received
                }
                #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 200"), "served once the idle ones were closed")
                // It was let in when a slot freed: the idle ones close at their timeout, one by one.
                #expect(idle.contains { $0.drain().closed }, "served only once an idle connection was closed")
                #expect(
                    try await GatewayHarness.eventually(within: 30) { idle.allSatisfy { $0.drain().closed } },
                    "every idle connection closed")
                #expect(await gateway.stop())
            }
        }
    }
}
