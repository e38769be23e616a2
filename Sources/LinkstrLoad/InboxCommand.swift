import ArgumentParser
import Foundation
import LoadSupport
import NIOCore
import NostrProtocol

/// `linkstr-load inbox`: the inbox relay's benchmark. It publishes gift wraps (kind 1059, signed,
/// ~1 KB, each to the next registered recipient in turn so that no coalescing applies) to a
/// gateway's inbox relay at `--rate` for `--seconds`, spread over `--connections`, and measures:
/// - EVENTs accepted a second, and EVENT-to-OK latency (the wrap checked and stored);
/// - publish-to-APNs latency, from the APNs sandbox's record of when each push arrived.
///
/// Baseline in the same run: how fast one core verifies the same wraps, the per-wrap CPU floor of
/// any relay that accepts them.
struct InboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inbox", abstract: "Publish gift wraps to a gateway's inbox relay at a rate; measure OK and publish-to-APNs latency.")

    @Option(help: "The inbox relay's URL.") var url = "ws://127.0.0.1:8788/relay"
    @Option(help: "A file of registered recipients' pubkeys, hex, one a line (as `linkstr-load pubkeys` writes).") var recipients: String
    @Option(help: "Gift wraps per second.") var rate = 5_000
    @Option(help: "Seconds to stream.") var seconds = 10
    @Option(help: "Connections the wraps are spread over.") var connections = 4
    @Option(help: "APNs sandbox base URL.") var sandbox = "https://localhost:2197"
    @Option(help: "The sandbox's CA (PEM).") var ca: String
    @Option(help: "Give up after this many seconds.") var deadline = 300

    /// The relay's OK for one EVENT: when it arrived, whether it accepted, and why not.
    struct Answer {
        let at: Double
        let accepted: Bool
        let message: String
    }

    func run() async throws {
        let keys = try String(contentsOfFile: recipients, encoding: .utf8).split(whereSeparator: \.isNewline).map(String.init)
        guard !keys.isEmpty else { throw ValidationError("\(recipients) names no recipients") }
        let total = rate * seconds
        print("signing \(total) gift wraps to \(keys.count) recipients")
        let order = keys.shuffled()
        let wraps = (0..<total).map { WrapStreaming.wrap(to: order[$0 % order.count]) }
        WrapStreaming.printVerificationBaseline(wraps)
        let messages = wraps.map { ByteBuffer(string: "[\"EVENT\",\($0.json)]") }

        let answers = Locked([String: Answer]())
        var clients: [BenchClient] = []
        for _ in 0..<max(1, connections) {
            clients.append(try await BenchClient.connect(to: url) { text, at in Self.record(text, at: at, in: answers) })
        }
        print("connected to \(url) \(clients.count) times")
        let sandboxClient = try SandboxClient(baseURL: sandbox, caFile: ca)
        let before = try await sandboxClient.answered()
        let expiry = ContinuousClock.now + .seconds(deadline)
        let sentAt = try await WrapStreaming.stream(count: total, rate: rate) { due in
            // This tick's EVENTs, round robin over the connections, each connection's in one write.
            var batches = [[ByteBuffer]](repeating: [], count: clients.count)
            for index in due { batches[index % clients.count].append(messages[index]) }
            for (client, batch) in zip(clients, batches) where !batch.isEmpty { client.send(batch) }
        }
        while answers.withLock({ $0.count }) < total, ContinuousClock.now < expiry { try await Task.sleep(for: .milliseconds(50)) }
        let answered = answers.withLock { $0 }
        let ids = wraps.map(\.id.hex)
        let sentByID = Dictionary(zip(ids, sentAt)) { first, _ in first }
        let accepted = Self.reportAnswers(answered, sentAt: sentByID, total: total)

        try await WrapStreaming.waitForDeliveries(accepted, after: before, from: sandboxClient, until: expiry)
        let records = try await sandboxClient.records(afterSequence: before)
        let delivered = WrapStreaming.reportLatencies(records, sentAt: sentByID, total: total, what: "publish-to-APNs")
        for client in clients { await client.close() }
        try await sandboxClient.shutdown()
        if accepted < total || delivered < total { throw ExitCode(1) }
    }

    /// Keeps an `OK` message's answer; anything else the relay says is not counted.
    private static func record(_ text: ByteBuffer, at: Double, in answers: Locked<[String: Answer]>) {
        guard case .array(let items)? = try? JSONValue(parsing: Array(text.readableBytesView)), items.count >= 3,
            items[0].stringValue == "OK", let id = items[1].stringValue
        else { return }
        let answer = Answer(at: at, accepted: items[2].boolValue == true, message: items.count > 3 ? items[3].stringValue ?? "" : "")
        answers.withLock { $0[id] = answer }
    }

    /// Prints EVENT-to-OK latency, EVENTs accepted a second, and why any were refused; returns how
    /// many were accepted.
    private static func reportAnswers(_ answers: [String: Answer], sentAt: [String: Double], total: Int) -> Int {
        var latencies: [Double] = []
        var refusals: [String: Int] = [:]
        var lastAccepted = 0.0
        for (id, answer) in answers {
            guard let sent = sentAt[id] else { continue }
            if answer.accepted {
                latencies.append(answer.at - sent)
                lastAccepted = max(lastAccepted, answer.at)
            } else {
                refusals[answer.message, default: 0] += 1
            }
        }
        latencies.sort()
        print("answered: \(answers.count) of \(total); accepted \(latencies.count)")
        for (message, count) in refusals.sorted(by: { $0.value > $1.value }).prefix(5) {
            print("refused \(count) times: \(JSONValue.string(message).serialized)")
        }
        if let first = sentAt.values.min(), !latencies.isEmpty {
            print(
                "accepted: \(Int((Double(latencies.count) / ((lastAccepted - first) / 1000)).rounded())) EVENTs/s (first send to last OK)")
            print(WrapStreaming.latencySummary("EVENT-to-OK latency ms", sorted: latencies))
        }
        return latencies.count
    }
}
