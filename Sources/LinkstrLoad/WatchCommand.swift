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
/// core verifies the same wraps (the watcher's per-wrap CPU floor).
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

    /// A gift wrap ready to stream: the EVENT message for the subscription that covers its
    /// recipient on the connection that holds that subscription.
    struct PreparedWrap {
        let id: String
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
            let wraps = Self.prepareWraps(total, routes: relay.routes())
            Self.printVerificationBaseline(wraps)

            let client = try SandboxClient(baseURL: sandbox, caFile: ca)
            let before = try await client.answered()
            let sentAt = try await stream(wraps, through: relay)
            try await waitForDeliveries(total, after: before, from: client, until: expiry)
            let records = try await client.records(afterSequence: before)
            let delivered = Self.reportLatencies(records, sentAt: sentAt, total: total)
            try await client.shutdown()
            if delivered < total { throw ExitCode(1) }
        }
    }

    private func waitForSubscriptions(on relay: BenchRelay, until expiry: ContinuousClock.Instant) async throws {
        print("waiting for the gateway to subscribe to \(pubkeys) pubkeys on ws://127.0.0.1:\(port)")
        while relay.coveredPubkeys() < pubkeys {
            guard ContinuousClock.now < expiry else {
                throw ValidationError("the gateway subscribed to only \(relay.coveredPubkeys()) pubkeys")
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
            let author = Keys.generate()
            let content = Base64.encode(SecureRandom.bytes(600))
            let event = UnsignedEvent(
                pubkey: author.publicKey, createdAt: UnixTime.now() - Int64.random(in: 0..<86_400), kind: 1059,
                tags: [["p", recipient]], content: content
            ).signed(by: author)
            let message = "[\"EVENT\",\(JSONValue.string(route.subscription).serialized),\(event.json)]"
            return PreparedWrap(id: event.id.hex, connection: route.connection, message: ByteBuffer(string: message), event: event)
        }
    }

    /// One core verifying the same wraps: the watcher's per-wrap CPU floor.
    private static func printVerificationBaseline(_ wraps: [PreparedWrap]) {
        let verifyStart = ContinuousClock.now
        var valid = 0
        for wrap in wraps.prefix(10_000) where wrap.event.isValid { valid += 1 }
        let verifySeconds = seconds(ContinuousClock.now - verifyStart)
        print(
            String(format: "baseline: one core verifies %.0f wraps/s (%d checked)", Double(min(10_000, wraps.count)) / verifySeconds, valid)
        )
    }

    /// Streams at `rate` in 10 ms ticks; returns when each wrap was sent (ms since 1970) by id.
    private func stream(_ wraps: [PreparedWrap], through relay: BenchRelay) async throws -> [String: Double] {
        let total = wraps.count
        var sentAt: [String: Double] = [:]
        sentAt.reserveCapacity(total)
        print("streaming \(total) wraps at \(rate)/s")
        let streamStart = ContinuousClock.now
        let tick = Duration.milliseconds(10)
        var sent = 0
        var nextTick = streamStart
        while sent < total {
            let due = min(total, Int(Self.seconds(ContinuousClock.now - streamStart) * Double(rate)) + 1)
            // This tick's events, per connection in one write.
            var batches: [Int: [ByteBuffer]] = [:]
            let now = Date().timeIntervalSince1970 * 1000
            while sent < due {
                let wrap = wraps[sent]
                sentAt[wrap.id] = now
                batches[wrap.connection, default: []].append(wrap.message)
                sent += 1
            }
            for (connection, messages) in batches { relay.send(messages, to: connection) }
            nextTick = nextTick + tick
            try await Task.sleep(until: nextTick, clock: .continuous)
        }
        let streamSeconds = Self.seconds(ContinuousClock.now - streamStart)
        print(String(format: "streamed %d wraps in %.2f s (%.0f/s)", total, streamSeconds, Double(total) / streamSeconds))
        return sentAt
    }

    private func waitForDeliveries(_ total: Int, after before: Int, from client: SandboxClient, until expiry: ContinuousClock.Instant)
        async throws
    {
        var answered = before
        while answered - before < total, ContinuousClock.now < expiry {
            try await Task.sleep(for: .milliseconds(100))
            answered = try await client.answered()
        }
    }

    /// Prints the latency timeline and summary; returns how many streamed wraps reached the sandbox.
    private static func reportLatencies(_ records: [JSONValue], sentAt: [String: Double], total: Int) -> Int {
        var latencies: [Double] = []
        var lastReceived = 0.0
        let first = sentAt.values.min() ?? 0
        // By the second the wrap was sent in: where in the run the slow ones were.
        var bySecond: [Int: [Double]] = [:]
        for record in records {
            guard let wrapID = record["payload"]?["wrap_id"]?.stringValue, let sent = sentAt[wrapID],
                case .integer(let received)? = record["received_at_ms"]
            else { continue }
            latencies.append(Double(received) - sent)
            bySecond[Int((sent - first) / 1000), default: []].append(Double(received) - sent)
            lastReceived = max(lastReceived, Double(received))
        }
        latencies.sort()
        let timeline = bySecond.keys.sorted().map { second -> String in
            let values = bySecond[second]!.sorted()
            func at(_ p: Double) -> Int { Int(values[min(values.count - 1, Int(Double(values.count) * p))]) }
            return String(second) + ":" + String(at(0.5)) + "/" + String(at(0.99)) + "/" + String(Int(values.last!))
        }
        print("latency ms by second sent (p50/p99/max): " + timeline.joined(separator: " "))
        print("pushes for the streamed wraps delivered to the sandbox: \(latencies.count) of \(total)")
        if !latencies.isEmpty {
            func percentile(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
            print(
                String(
                    format: "sustained: %.0f wraps/s relay-to-APNs (first send to last delivery)",
                    Double(latencies.count) / ((lastReceived - first) / 1000)))
            print(
                String(
                    format: "relay-to-APNs latency ms: p50 %.1f  p95 %.1f  p99 %.1f  max %.1f", percentile(0.5), percentile(0.95),
                    percentile(0.99), latencies.last!))
        }
        return latencies.count
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
