import ArgumentParser
import AsyncHTTPClient
import Foundation
import LoadSupport
import Logging
import NIOCore
import NIOSSL
import NostrProtocol
import NostrRelay

/// `push-load`: drives a running local system (gateway, relay, APNs sandbox, as `scripts/up.sh`
/// brings up) the way real traffic does, and measures it end to end:
///
/// 1. `--users` simulated users register devices with signed requests (half with `relay_watch`);
/// 2. for `--duration` seconds, `--senders` senders publish gift wraps to the relay at
///    `--wrap-rate` (each to a watching user, round robin so no device is hit twice inside the
///    watcher's coalescing window) while typed `POST /v1/push` requests go out at `--push-rate`;
/// 3. it reads what the sandbox received and matches each push to what caused it by event id.
///
/// Everything a request needs is signed or wrapped before the clock starts. Every loop is bounded
/// by count and by time, and only loopback targets are accepted.
@main
struct PushLoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push-load",
        abstract:
            "End-to-end load on a local linkstr system: registrations/s, wraps/s, pushes/s delivered, latency, errors; CSV and SVG out.")

    @Option(help: "Gateway base URL (loopback only).") var gateway = "http://127.0.0.1:8787"
    @Option(help: "Relay the gateway watches (loopback only).") var relay = "ws://127.0.0.1:7447"
    @Option(help: "APNs sandbox base URL (loopback only).") var sandbox = "https://localhost:2197"
    @Option(help: "The sandbox's CA (PEM).") var ca = "/var/tmp/linkstr-local/apns-sandbox-ca.pem"
    @Option(help: "Simulated users (devices registered; half watch relays).") var users = 2_000
    @Option(help: "Gift-wrap senders.") var senders = 20
    @Option(help: "Gift wraps per second to the relay (0: none).") var wrapRate = 100.0
    @Option(help: "Typed pushes per second to POST /v1/push (0: none).") var pushRate = 100.0
    @Option(help: "Seconds of traffic.") var duration = 10.0
    @Option(help: "Seconds to wait for the last pushes to reach the sandbox.") var drain = 30.0
    @Option(help: "Requests in flight at most.") var concurrency = 64
    @Option(help: "Directory for results.csv and latency.svg.") var out = "load-results"

    func validate() throws {
        for (name, url) in [("--gateway", gateway), ("--relay", relay), ("--sandbox", sandbox)] {
            guard let host = URLComponents(string: url)?.host, ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host) else {
                throw ValidationError("\(name) must target loopback (127.0.0.1, localhost or ::1): \(url)")
            }
        }
        guard users >= 2, senders >= 1, wrapRate >= 0, pushRate >= 0, duration > 0, duration <= 600, drain >= 0, drain <= 600 else {
            throw ValidationError("need users ≥ 2, senders ≥ 1, rates ≥ 0, 0 < duration ≤ 600 s, 0 ≤ drain ≤ 600 s")
        }
        guard wrapRate * duration <= 200_000, pushRate * duration <= 200_000 else {
            throw ValidationError("at most 200,000 wraps and 200,000 pushes per run")
        }
    }

    func run() async throws {
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let sandboxClient = try SandboxClient(baseURL: sandbox, caFile: ca)
        do {
            try await measure(http: http, sandboxClient: sandboxClient)
        } catch {
            try? await http.shutdown()
            try? await sandboxClient.client.shutdown()
            throw error
        }
        try await http.shutdown()
        try await sandboxClient.client.shutdown()
    }

    func measure(http: HTTPClient, sandboxClient: SandboxClient) async throws {
        var report = LoadReport()
        let runID = Hex.encode(SecureRandom.bytes(4))

        // 1. Registrations.
        let people = (0..<users).map { _ in Keys.generate() }
        let watching = people.indices.filter { $0 % 2 == 0 }, typed = people.indices.filter { $0 % 2 == 1 }
        try await register(people, http: http, report: &report)
        // Let the watcher subscribe for the new pubkeys.
        try await Task.sleep(for: .seconds(2))

        // 2. Prepare traffic before the clock starts.
        let wrapCount = Int(wrapRate * duration), pushCount = Int(pushRate * duration)
        let senderKeys = (0..<senders).map { _ in Keys.generate() }
        print("preparing \(wrapCount) gift wraps and \(pushCount) typed pushes…")
        let wraps = try await Self.wraps(count: wrapCount, senders: senderKeys, recipients: watching.map { people[$0].publicKey })
        let pushes = preparePushes(pushCount, to: typed.map { people[$0].publicKey }, runID: runID)

        var logger = Logger(label: "push-load")
        logger.logLevel = .warning
        let connection = RelayConnection(url: relay, configuration: RelayConfiguration(), logger: logger)
        let relayTask = Task { try? await connection.run() }
        defer { relayTask.cancel() }
        for await state in await connection.states() where state == .connected { break }
        let sequenceBefore = try await sandboxClient.answered()

        // 3. Traffic, both loops at their rates, bounded by count and by duration.
        print(String(format: "sending for %.0f s: %.0f wraps/s, %.0f pushes/s…", duration, wrapRate, pushRate))
        let trafficStart = Date()
        async let wrapResult = Self.publish(wraps, rate: wrapRate, connection: connection, concurrency: concurrency, seconds: duration)
        async let pushResult = Self.paced(pushes, rate: pushRate, gateway: gateway, http: http, concurrency: concurrency, seconds: duration)
        let (published, pushed) = try await (wrapResult, pushResult)
        let trafficSeconds = Date().timeIntervalSince(trafficStart)
        report.merge(errors: published.errors)
        report.merge(errors: pushed.errors)
        report.wrapsPerSecond = Double(published.sent.count) / trafficSeconds
        report.pushRequestsPerSecond = Double(pushed.sent.count) / trafficSeconds

        // 4. What reached the sandbox, matched by event id.
        var expected: [String: (kind: String, sentAt: Double)] = [:]
        for (id, at) in published.sent { expected[id] = ("wrap", at) }
        for (id, at) in pushed.sent { expected[id] = ("push", at) }
        let deliveries = try await collectDeliveries(of: expected, from: sandboxClient, afterSequence: sequenceBefore)
        Self.record(deliveries, of: expected, since: trafficStart.timeIntervalSince1970, into: &report)
        report.expected = ["wrap": published.sent.count, "push": pushed.sent.count]

        // 5. Report, CSV and plot.
        try write(report, since: trafficStart.timeIntervalSince1970)
    }

    private func register(_ people: [Keys], http: HTTPClient, report: inout LoadReport) async throws {
        let registrations = people.enumerated().map { index, keys in
            SignedRequest.make(
                keys: keys, method: "POST", path: "/v1/devices/register",
                json:
                    #"{"device_token":"\#(Self.token())","apns_environment":"sandbox","relay_watch":\#(index % 2 == 0)}"#)
        }
        print("registering \(users) devices…")
        let registered = try await Self.send(
            registrations, to: gateway, http: http, concurrency: concurrency, report: &report, kind: "register")
        report.registrationsPerSecond = Double(registered.succeeded) / max(registered.seconds, 1e-9)
        print(
            String(format: "registrations: %d in %.2f s = %.0f/s", registered.succeeded, registered.seconds, report.registrationsPerSecond))
    }

    /// Signed typed pushes, recipient round robin, each with an event id unique to this run.
    private func preparePushes(_ count: Int, to recipients: [PublicKey], runID: String) -> [(eventID: String, request: SignedRequest)] {
        // Enough distinct senders that none exceeds the gateway's default per-pubkey limit (20/s).
        let pushers = (0..<max(1, Int((pushRate / 10).rounded(.up)))).map { _ in Keys.generate() }
        return (0..<count).map { index in
            let recipient = recipients[index % recipients.count].hex
            let eventID = "load-\(runID)-\(index)"
            return (
                eventID,
                SignedRequest.make(
                    keys: pushers[index % pushers.count], method: "POST", path: "/v1/push",
                    json:
                        #"{"notification_type":"new_post","event_id":"\#(eventID)","conversation_id":"load-\#(runID)","recipient_pubkeys":["\#(recipient)"]}"#
                )
            )
        }
    }

    /// When each expected id reached the sandbox (seconds since 1970), polling until all did or `drain` ran out.
    private func collectDeliveries(
        of expected: [String: (kind: String, sentAt: Double)], from sandboxClient: SandboxClient,
        afterSequence sequenceBefore: Int
    ) async throws -> [String: Double] {
        let deadline = Date().addingTimeInterval(drain)
        var deliveries: [String: Double] = [:]
        repeat {
            for record in try await sandboxClient.records(afterSequence: sequenceBefore) {
                // Typed pushes carry `event_id`; the watcher's carry the gift wrap's id as `wrap_id`.
                guard case .integer(let received)? = record["received_at_ms"],
                    let id = (record["payload"]?["event_id"] ?? record["payload"]?["wrap_id"])?.stringValue,
                    expected[id] != nil, deliveries[id] == nil
                else { continue }
                deliveries[id] = Double(received) / 1000
            }
            if deliveries.count >= expected.count { break }
            try await Task.sleep(for: .milliseconds(500))
        } while Date() < deadline
        return deliveries
    }

    private static func record(
        _ deliveries: [String: Double], of expected: [String: (kind: String, sentAt: Double)], since trafficStart: Double,
        into report: inout LoadReport
    ) {
        let lastDelivery = deliveries.values.max() ?? trafficStart
        report.deliveredPerSecond = Double(deliveries.count) / max(lastDelivery - trafficStart, 1e-9)
        for (id, sent) in expected {
            if let delivered = deliveries[id] {
                report.samples.append(.init(kind: sent.kind, id: id, sentAt: sent.sentAt, deliveredAt: delivered))
            } else {
                report.undelivered[sent.kind, default: 0] += 1
                report.lost.append((sent.kind, sent.sentAt))
            }
        }
    }

    private func write(_ report: LoadReport, since trafficStart: Double) throws {
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        try report.csv(since: trafficStart).write(toFile: out + "/results.csv", atomically: true, encoding: .utf8)
        try report.svg(since: trafficStart).write(toFile: out + "/latency.svg", atomically: true, encoding: .utf8)
        print(report.summary)
        print("wrote \(out)/results.csv and \(out)/latency.svg")
    }

    // MARK: Traffic

    /// A random device token that never starts with `0`: the sandbox scripts failures for tokens
    /// starting `04…`/`05…`, and a load run measures the happy path.
    static func token() -> String { "f" + Hex.encode(SecureRandom.bytes(32)).dropFirst() }

    /// One gift wrap per slot, sender round robin, recipient round robin (so a device sees at most
    /// one wrap per `recipients.count / rate` seconds).
    static func wraps(count: Int, senders: [Keys], recipients: [PublicKey]) async throws -> [NostrEvent] {
        let cores = max(ProcessInfo.processInfo.activeProcessorCount, 1)
        let chunk = max(1, (count + cores - 1) / cores)
        return try await withThrowingTaskGroup(of: (Int, [NostrEvent]).self) { group in
            for start in stride(from: 0, to: count, by: chunk) {
                group.addTask {
                    (
                        start,
                        try (start..<min(start + chunk, count)).map { index in
                            let sender = senders[index % senders.count]
                            let rumor = UnsignedEvent(
                                pubkey: sender.publicKey, kind: 44001,
                                content: #"{"conversation_id":"load","root_id":"","kind":"root","url":"https://example.com/\#(index)"}"#)
                            return try GiftWrap.make(rumor, author: sender, recipient: recipients[index % recipients.count])
                        }
                    )
                }
            }
            var parts: [(Int, [NostrEvent])] = []
            for try await part in group { parts.append(part) }
            return parts.sorted { $0.0 < $1.0 }.flatMap(\.1)
        }
    }

    struct Outcome {
        var sent: [(String, Double)] = []
        var errors: [String: Int] = [:]
        var succeeded = 0
        var seconds = 0.0
    }

    /// Sends as fast as `concurrency` allows (registrations).
    static func send(
        _ requests: [SignedRequest], to base: String, http: HTTPClient, concurrency: Int, report: inout LoadReport, kind: String
    ) async throws -> Outcome {
        let start = Date()
        var outcome = Outcome()
        try await withThrowingTaskGroup(of: Int.self) { group in
            var iterator = requests.makeIterator()
            for _ in 0..<concurrency { if let next = iterator.next() { group.addTask { await next.send(base: base, http: http) } } }
            while let status = try await group.next() {
                if (200..<300).contains(status) {
                    outcome.succeeded += 1
                } else {
                    outcome.errors["\(kind) HTTP \(status)", default: 0] += 1
                }
                if let next = iterator.next() { group.addTask { await next.send(base: base, http: http) } }
            }
        }
        outcome.seconds = Date().timeIntervalSince(start)
        report.merge(errors: outcome.errors)
        return outcome
    }

    /// Typed pushes at `rate`, stopping at the last request or after `seconds`.
    static func paced(
        _ requests: [(eventID: String, request: SignedRequest)], rate: Double, gateway: String, http: HTTPClient, concurrency: Int,
        seconds: Double
    ) async throws -> Outcome {
        guard rate > 0, !requests.isEmpty else { return Outcome() }
        return try await pace(count: requests.count, rate: rate, concurrency: concurrency, seconds: seconds) { index in
            let status = await requests[index].request.send(base: gateway, http: http)
            return (200..<300).contains(status) ? .success(requests[index].eventID) : .failure("push HTTP \(status)")
        }
    }

    /// Gift wraps to the relay at `rate`; a wrap counts as sent once the relay accepted it.
    static func publish(_ wraps: [NostrEvent], rate: Double, connection: RelayConnection, concurrency: Int, seconds: Double) async throws
        -> Outcome
    {
        guard rate > 0, !wraps.isEmpty else { return Outcome() }
        return try await pace(count: wraps.count, rate: rate, concurrency: concurrency, seconds: seconds) { index in
            do {
                let answer = try await connection.publish(wraps[index])
                return answer.accepted
                    ? .success(wraps[index].id.hex) : .failure("relay refused: \(answer.prefix.map { "\($0)" } ?? "other")")
            } catch {
                return .failure("relay: \(error)")
            }
        }
    }

    enum Attempt: Sendable {
        case success(String)
        case failure(String)
    }

    /// Starts attempt `i` at `i / rate` seconds (never more than `concurrency` in flight), records
    /// the wall time it started, and stops scheduling after `seconds`.
    static func pace(
        count: Int, rate: Double, concurrency: Int, seconds: Double,
        _ attempt: @escaping @Sendable (Int) async -> Attempt
    ) async throws -> Outcome {
        let clock = ContinuousClock()
        let start = clock.now
        let limit = start + .milliseconds(Int64(seconds * 1000))
        var outcome = Outcome()
        try await withThrowingTaskGroup(of: (Attempt, Double).self) { group in
            var inFlight = 0
            for index in 0..<count {
                let due = start + .microseconds(Int64(Double(index) / rate * 1_000_000))
                guard due < limit else { break }
                if clock.now < due { try await clock.sleep(until: due) }
                while inFlight >= concurrency, let (result, sentAt) = try await group.next() {
                    inFlight -= 1
                    outcome.record(result, sentAt: sentAt)
                }
                group.addTask {
                    let sentAt = Date().timeIntervalSince1970
                    return (await attempt(index), sentAt)
                }
                inFlight += 1
            }
            while let (result, sentAt) = try await group.next() { outcome.record(result, sentAt: sentAt) }
        }
        return outcome
    }
}

extension PushLoadCommand.Outcome {
    mutating func record(_ attempt: PushLoadCommand.Attempt, sentAt: Double) {
        switch attempt {
        case .success(let id):
            sent.append((id, sentAt))
            succeeded += 1
        case .failure(let kind):
            errors[kind, default: 0] += 1
        }
    }
}
