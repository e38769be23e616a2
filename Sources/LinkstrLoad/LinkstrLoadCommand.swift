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
        abstract: "Registers devices, then POST /v1/push and waits until the sandbox has every notification.")

    /// Which of the sandbox's faces the devices are on.
    enum Platform: String, ExpressibleByArgument, CaseIterable {
        case apns, fcm, webpush
    }

    @OptionGroup var options: LoadOptions
    @Option(help: "The devices' platform: apns, fcm or webpush (the gateway must have it on).") var platform = Platform.apns
    @Option(help: "Sandbox base URL.") var sandbox = "https://localhost:2197"
    @Option(help: "The sandbox's CA (PEM).") var ca: String
    @Option(help: "Devices (one per recipient pubkey).") var devices = 2_000
    @Option(help: "Recipients per push (at most 500).") var recipients = 500
    @Option(help: "Pushes to send; notifications = pushes × recipients.") var pushes = 100

    func run() async throws {
        let owners = (0..<devices).map { _ in Keys.generate() }
        let sender = Keys.generate()
        let sandboxClient = try SandboxClient(baseURL: sandbox, caFile: ca)
        let bodies = try await registrationBodies(sandboxClient)
        let registrations = zip(owners, bodies).map { keys, body in
            SignedRequest.make(keys: keys, method: "POST", path: "/v1/devices/register", json: body)
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
        let before = try await delivered(sandboxClient)

        // The benchmark measures CPU per push from this line to the "delivered" one: the
        // devices' registration above is set-up, measured on its own as registrations.
        printNow("pushing \(pushes) requests to \(devices) registered devices")
        let started = Date()
        let run = try await runner.send(pushRequests)
        var answered = before
        while answered - before < expected, Date().timeIntervalSince(started) < Double(options.deadline) {
            try await Task.sleep(for: .milliseconds(20))
            answered = try await delivered(sandboxClient)
        }
        let finished = Date()
        run.print(title: "push requests (enqueue)", unit: "requests")
        let delivered = answered - before
        let seconds = finished.timeIntervalSince(started)
        printNow("notifications delivered to the sandbox: \(delivered) of \(expected) in \(String(format: "%.2f", seconds)) s")
        print(String(format: "pushes/s (notifications to \(platform.rawValue)): %.0f", Double(delivered) / seconds))
        guard platform == .apns else {
            try await sandboxClient.shutdown()
            if delivered < expected { throw ExitCode(1) }
            return
        }

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

    /// One registration body per device: an APNs token, an FCM token, or a subscription the
    /// sandbox's Web Push face makes (32 at a time).
    private func registrationBodies(_ sandboxClient: SandboxClient) async throws -> [String] {
        switch platform {
        case .apns:
            return (0..<devices).map { #"{"device_token":"\#(LoadTokens.token(1_000_000 + $0))","apns_environment":"sandbox"}"# }
        case .fcm:
            return (0..<devices).map { #"{"platform":"fcm","device_token":"load-fcm-\#(LoadTokens.token(2_000_000 + $0))"}"# }
        case .webpush:
            var bodies = [String](repeating: "", count: devices)
            for chunk in stride(from: 0, to: devices, by: 32) {
                try await withThrowingTaskGroup(of: (Int, String).self) { group in
                    for index in chunk..<min(chunk + 32, devices) {
                        group.addTask {
                            let subscription = try await sandboxClient.post("/webpush/subscriptions")
                            return (index, JSONValue.object(["platform": "webpush", "subscription": subscription]).serialized)
                        }
                    }
                    for try await (index, body) in group { bodies[index] = body }
                }
            }
            return bodies
        }
    }

    /// Notifications the sandbox has taken on this platform's face so far.
    private func delivered(_ sandboxClient: SandboxClient) async throws -> Int {
        switch platform {
        case .apns: return try await sandboxClient.answered()
        case .fcm: return Int(try await sandboxClient.get("/fcm/stats")["delivered"]?.integerValue ?? 0)
        case .webpush: return Int(try await sandboxClient.get("/webpush/stats")["delivered"]?.integerValue ?? 0)
        }
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
