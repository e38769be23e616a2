import AsyncHTTPClient
import Logging
import NostrProtocol
import PushGateway
import Testing

/// How many pinned clients live, and for how long: each holds its own TLS context, so hosts an
/// attacker names in numbers, or that went quiet, must not keep theirs. No request is made here.
@Suite struct PinnedHTTPClientsTests {
    static let loopback: [IPAddress] = [.v4([127, 0, 0, 1])]

    @Test func aHostKeepsItsClientWhileItsAddressIsJudgedAndGetsANewOneWhenNot() async throws {
        let clients = PinnedHTTPClients(configuration: .init(), logger: Logger(label: "test"))
        let first = try await clients.withClient(host: "a.example", addresses: Self.loopback) { ObjectIdentifier($0) }
        let again = try await clients.withClient(host: "a.example", addresses: [.v4([127, 0, 0, 9])] + Self.loopback) {
            ObjectIdentifier($0)
        }
        #expect(first == again, "the address is still among the judged ones")
        let moved = try await clients.withClient(host: "a.example", addresses: [.v4([127, 0, 0, 9])]) { ObjectIdentifier($0) }
        #expect(moved != first)
        #expect(clients.count == 1)
        await clients.shutdown()
    }

    @Test func pastTheLimitTheLeastRecentlyUsedHostLosesItsClient() async throws {
        let clients = PinnedHTTPClients(configuration: .init(), logger: Logger(label: "test"), limit: 2)
        for host in ["a.example", "b.example", "c.example", "d.example"] {
            try await clients.withClient(host: host, addresses: Self.loopback) { _ in }
        }
        #expect(clients.count == 2)
        await clients.shutdown()
    }

    @Test func idleClientsAreRetiredWhenTheNextOneIsMade() async throws {
        let clients = PinnedHTTPClients(configuration: .init(), logger: Logger(label: "test"), idleLimit: .seconds(2))
        try await clients.withClient(host: "a.example", addresses: Self.loopback) { _ in }
        try await clients.withClient(host: "b.example", addresses: Self.loopback) { _ in }
        #expect(clients.count == 2)
        try await Task.sleep(for: .milliseconds(2_500))
        try await clients.withClient(host: "c.example", addresses: Self.loopback) { _ in }
        #expect(clients.count == 1, "a and b idled past the limit")
        await clients.shutdown()
    }

    @Test func afterShutdownNoClientIsMade() async throws {
        let clients = PinnedHTTPClients(configuration: .init(), logger: Logger(label: "test"))
        try await clients.withClient(host: "a.example", addresses: Self.loopback) { _ in }
        await clients.shutdown()
        #expect(clients.count == 0)
        await #expect(throws: CancellationError.self) {
            try await clients.withClient(host: "a.example", addresses: Self.loopback) { _ in }
        }
    }
}
