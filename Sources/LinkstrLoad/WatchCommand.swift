import ArgumentParser
import Foundation
import LoadSupport
import NIOCore
import NostrProtocol

/// `linkstr-load watch`: the relay watcher's benchmark. It is the relay the gateway watches
/// (`BenchRelay`); once the gateway's subscriptions cover `--pubkeys` pubkeys it streams gift
/// wraps (kind 1059, signed, ~1 KB, each to a different watched pubkey so no coalescing applies)
/// at `--rate` for `--seconds`, and reads from the APNs sandbox when each one arrived:
/// relay-to-APNs latency p50/p99 and sustained wraps/s. Baseline in the same run: how fast one
/// core verifies the same wraps (the watcher's per-wrap CPU floor). With `--user-relays N` it is
/// also N more relays, told apart by path, and the wraps go only there: the watcher following
/// each user's own relays.
struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch", abstract: "Be the relay a gateway watches, stream gift wraps at a rate, measure relay-to-APNs latency.")

    @Option(help: "Port the bench relay listens on (the gateway's RELAYS must point here).") var port = 7448
    @Option(help: "Watched pubkeys to wait for before streaming.") var pubkeys = 100_000
    @Option(help: "Gift wraps per second.") var rate = 5_000
    @Option(help: "Seconds to stream.") var seconds = 10
    @Option(help: "APNs sandbox base URL.") var sandbox = "https://localhost:2197"
    @Option(help: "The sandbox's CA (PEM).") var ca: String
    @Option(help: "Give up after this many seconds.") var deadline = 300
    @Option(
        help: """
            Also serve this many user relays at ws://127.0.0.1:PORT/u0 … /u{N-1} (the watched users' own relays, \
            which the gateway learns from their registrations), and stream only on them.
            """)
    var userRelays = 0

    /// A gift wrap ready to stream: the EVENT message for the subscription that covers its
    /// recipient on the connection that holds that subscription.
    struct PreparedWrap {
        let connection: Int
        let message: ByteBuffer
        let event: NostrEvent
    }

    func run() async throws {
        let relay = BenchRelay()
        let started = ContinuousClock.now
        let expiry = started + .seconds(deadline)
        let port = self.port
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await relay.serve(host: "127.0.0.1", port: port) }
            defer { group.cancelAll() }

            try await waitForSubscriptions(on: relay, until: expiry)
            print("subscribed after \(ContinuousClock.now - started); generating wraps")
            let total = rate * seconds
            let wraps = Self.prepareWraps(total, routes: relay.routes(userRelaysOnly: userRelays > 0))
            WrapStreaming.printVerificationBaseline(wraps.map(\.event))

            let client = try SandboxClient(baseURL: sandbox, caFile: ca)
            let before = try await client.answered()
            let sentAt = try await WrapStreaming.stream(count: total, rate: rate) { due in
                // This tick's events, per connection in one write.
                var batches: [Int: [ByteBuffer]] = [:]
                for wrap in wraps[due] { batches[wrap.connection, default: []].append(wrap.message) }
                for (connection, messages) in batches { relay.send(messages, to: connection) }
            }
            try await WrapStreaming.waitForDeliveries(total, after: before, from: client, until: expiry)
            let records = try await client.records(afterSequence: before)
            let sentByID = Dictionary(zip(wraps.map(\.event.id.hex), sentAt)) { first, _ in first }
            let delivered = WrapStreaming.reportLatencies(records, sentAt: sentByID, total: total, what: "relay-to-APNs")
            try await client.shutdown()
            if delivered < total { throw ExitCode(1) }
        }
    }

    private func waitForSubscriptions(on relay: BenchRelay, until expiry: ContinuousClock.Instant) async throws {
        let relays = userRelays > 0 ? "its \(userRelays) user relays ws://127.0.0.1:\(port)/u…" : "ws://127.0.0.1:\(port)"
        print("waiting for the gateway to subscribe to \(pubkeys) pubkeys on \(relays)")
        while relay.coveredPubkeys(userRelaysOnly: userRelays > 0) < pubkeys {
            guard ContinuousClock.now < expiry else {
                throw ValidationError("the gateway subscribed to only \(relay.coveredPubkeys(userRelaysOnly: userRelays > 0)) pubkeys")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Each wrap to the next recipient in turn, so consecutive wraps never coalesce.
    private static func prepareWraps(_ total: Int, routes: [String: (connection: Int, subscription: String)]) -> [PreparedWrap] {
        let recipients = Array(routes.keys).shuffled()
        return (0..<total).map { index in
            let recipient = recipients[index % recipients.count]
            let route = routes[recipient]!
            let event = WrapStreaming.wrap(to: recipient)
            let message = "[\"EVENT\",\(JSONValue.string(route.subscription).serialized),\(event.json)]"
            return PreparedWrap(connection: route.connection, message: ByteBuffer(string: message), event: event)
        }
    }
}
