import ArgumentParser
import AsyncHTTPClient
import Foundation
import LoadSupport
import NIOCore
import NIOSSL
import NostrProtocol

/// `linkstr-load`: drives a running gateway (and reads the APNs sandbox) to measure registrations/s,
/// pushes/s and enqueue-to-APNs latency. Requests are signed before the clock starts, so the figures
/// are the gateway's, not the signer's. Bounded by count and by a deadline.
@main
struct LinkstrLoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "linkstr-load",
        abstract: "Load generator for linkstr-push: registrations/s, pushes/s to the APNs sandbox, enqueue-to-APNs latency.",
        subcommands: [
            RegistrationsCommand.self, PushesCommand.self, WatchCommand.self, InboxCommand.self, PubkeysCommand.self, IngestCommand.self,
        ])
}

struct LoadOptions: ParsableArguments {
    @Option(help: "Gateway base URL.") var url = "http://127.0.0.1:8787"
    @Option(help: "Concurrent requests in flight.") var concurrency = 32
    @Option(help: "Give up after this many seconds.") var deadline = 120
}

struct RegistrationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "registrations", abstract: "POST /v1/devices/register N times (distinct pubkeys and tokens).")

    @OptionGroup var options: LoadOptions
    @Option(help: "Registrations to send.") var count = 20_000
    @Option(help: "Distinct pubkeys (each registers count/keys devices).") var keys = 2_000

    func run() async throws {
        let signers = (0..<max(1, keys)).map { _ in Keys.generate() }
        let requests = (0..<count).map { index in
            SignedRequest.make(
                keys: signers[index % signers.count], method: "POST", path: "/v1/devices/register",
                json: #"{"device_token":"\#(LoadTokens.token(index))","apns_environment":"sandbox"}"#)
        }
        let run = try await LoadRunner(baseURL: options.url, concurrency: options.concurrency, deadline: options.deadline).send(requests)
        run.print(title: "registrations", unit: "registrations")
    }
}

struct PushesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushes",
        abstract: "Registers devices, then POST /v1/push and waits until the APNs sandbox has every notification.")

    @OptionGroup var options: LoadOptions
    @Option(help: "APNs sandbox base URL.") var sandbox = "https://localhost:2197"
    @Option(help: "The sandbox's CA (PEM).") var ca: String
    @Option(help: "Devices (one per recipient pubkey).") var devices = 2_000
    @Option(help: "Recipients per push (at most 500).") var recipients = 500
    @Option(help: "Pushes to send; notifications = pushes × recipients.") var pushes = 100

    func run() async throws {
        let owners = (0..<devices).map { _ in Keys.generate() }
        let sender = Keys.generate()
        let registrations = owners.enumerated().map { index, keys in
            SignedRequest.make(
                keys: keys, method: "POST", path: "/v1/devices/register",
                json: #"{"device_token":"\#(LoadTokens.token(1_000_000 + index))","apns_environment":"sandbox"}"#)
        }
        let runner = LoadRunner(baseURL: options.url, concurrency: options.concurrency, deadline: options.deadline)
        _ = try await runner.send(registrations)

        let pushRequests = (0..<pushes).map { index in
            let start = (index * recipients) % max(1, devices)
            let list = (0..<min(recipients, devices)).map { owners[(start + $0) % devices].publicKey.hex }
            let body = JSONValue.object([
                "notification_type": "new_post", "event_id": .string("load-\(index)"), "conversation_id": "load",
                "recipient_pubkeys": .array(list.map { .string($0) }),
            ]).serialized
            return SignedRequest.make(keys: sender, method: "POST", path: "/v1/push", json: body)
        }
        let expected = pushes * min(recipients, devices)
        let sandboxClient = try SandboxClient(baseURL: sandbox, caFile: ca)
        let before = try await sandboxClient.answered()

        let started = Date()
        let run = try await runner.send(pushRequests)
        var answered = before
        while answered - before < expected, Date().timeIntervalSince(started) < Double(options.deadline) {
            try await Task.sleep(for: .milliseconds(20))
            answered = try await sandboxClient.answered()
        }
        let finished = Date()
        run.print(title: "push requests (enqueue)", unit: "requests")
        let delivered = answered - before
        let seconds = finished.timeIntervalSince(started)
        print("notifications delivered to the sandbox: \(delivered) of \(expected) in \(String(format: "%.2f", seconds)) s")
        print(String(format: "pushes/s (notifications to APNs): %.0f", Double(delivered) / seconds))

        // Enqueue-to-APNs latency: the push request's send time to the sandbox's receive time.
        let records = try await sandboxClient.records(afterSequence: before)
        var latencies: [Double] = []
        for record in records {
            guard let event = record["payload"]?["event_id"]?.stringValue, event.hasPrefix("load-"), let index = Int(event.dropFirst(5)),
                index < run.sentAt.count, case .integer(let receivedMilliseconds)? = record["received_at_ms"]
            else { continue }
            latencies.append(Double(receivedMilliseconds) - run.sentAt[index].timeIntervalSince1970 * 1000)
        }
        latencies.sort()
        if !latencies.isEmpty {
            func percentile(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
            print(
                String(
                    format: "enqueue-to-APNs latency ms: p50 %.0f  p99 %.0f  max %.0f  (n=%d)", percentile(0.5), percentile(0.99),
                    latencies.last!, latencies.count))
        }
        try await sandboxClient.shutdown()
        if delivered < expected { throw ExitCode(1) }
    }
}

/// Distinct 64-hex device tokens that avoid the sandbox's scripted-failure prefixes (`04…`, `05…`).
enum LoadTokens {
    static func token(_ index: Int) -> String {
        var bytes = [UInt8](repeating: 0x11, count: 32)
        bytes[0] = 0xAA
        withUnsafeBytes(of: UInt64(index).bigEndian) { bytes.replaceSubrange(24..<32, with: $0) }
        return Hex.encode(bytes)
    }
}
