import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NostrProtocol
import PushGateway
import TestSupport
import Testing

/// A real `linkstr-push serve` process (the binary built next to the test bundle), for tests that
/// kill it with SIGKILL or run two of them on one database.
final class GatewayProcess: Sendable {
    let process: ChildProcess
    let port: Int
    /// stdout and stderr of the process. Removed once it has stopped (`stop`, `terminate`: a
    /// failed stop puts the end of it into the test's failure); kept after `kill()`.
    let logPath: String
    var baseURL: String { "http://127.0.0.1:\(port)" }

    static func binary() throws -> String {
        if let path = ProcessInfo.processInfo.environment["LINKSTR_PUSH_BINARY"] { return path }
        return try ChildProcess.builtProduct("linkstr-push")
    }

    /// Starts the gateway against `database`, delivering to `sandbox`, and waits until `/readyz` is 200.
    static func start(database: DatabaseURL, sandbox: SandboxFixture, environment extra: [String: String] = [:]) async throws
        -> GatewayProcess
    {
        // A port taken between choosing and binding it is retried on another; any other early
        // exit fails with the end of the process's log in the message, since CI keeps no files.
        var attempt = 1
        while true {
            do {
                return try await startOnce(database: database, sandbox: sandbox, environment: extra)
            } catch let failure as EarlyExit where failure.log.contains("Address already in use") && attempt < 3 {
                attempt += 1
            }
        }
    }

    struct EarlyExit: Error, CustomStringConvertible {
        let log: String
        var description: String { "linkstr-push exited at start; the end of its log:\n" + log }
    }

    private static func startOnce(database: DatabaseURL, sandbox: SandboxFixture, environment extra: [String: String]) async throws
        -> GatewayProcess
    {
        let port = try LoopbackPort.free()
        var environment = ProcessInfo.processInfo.environment
        let app = sandbox.apns.apps[0]
        environment.merge([
            "LISTEN_ADDR": "127.0.0.1:\(port)",
            "DATABASE_URL":
                "postgres://\(database.username)\(database.password.map { ":" + $0 } ?? "")@\(database.host):\(database.port)/\(database.database)",
            "LOG_LEVEL": ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"] ?? "warning",
            // Tests drive one instance hard from one address; the limits have their own tests.
            "RATE_LIMIT_IP": "0", "RATE_LIMIT_PUBKEY": "0",
            "APNS_TOPIC": app.topic, "APNS_KEY_ID": app.keyID, "APNS_TEAM_ID": app.teamID, "APNS_KEY_P8": app.privateKeyPEM,
            "APNS_SANDBOX_URL": sandbox.url, "APNS_PRODUCTION_URL": sandbox.url, "APNS_CA_FILE": sandbox.caFile,
        ]) { $1 }
        environment.merge(extra) { $1 }
        let logPath = FileManager.default.temporaryDirectory.appendingPathComponent("linkstr-push-\(port).log").path
        let process = try ChildProcess(executable: try binary(), arguments: ["serve"], logPath: logPath, environment: environment)
        let gateway = GatewayProcess(process: process, port: port, logPath: logPath)
        // A busy machine can take a while to start a process, migrate and answer readiness.
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let response = try? await gateway.get("/readyz"), response.status == 200 { return gateway }
            guard process.isRunning else {
                let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "(no log at \(logPath))"
                throw EarlyExit(log: String(log.suffix(4_000)))
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        gateway.kill()
        throw TestSetupError("linkstr-push did not become ready on port \(port)")
    }

    private init(process: ChildProcess, port: Int, logPath: String) {
        self.process = process
        self.port = port
        self.logPath = logPath
    }

    /// The last `characters` of the process's log so far, for a failure's message (CI keeps no
    /// files, and a test's own view rarely says why a process did not do its part).
    func logTail(_ characters: Int = 6_000) -> String {
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "(no log at \(logPath))"
        return String(log.suffix(characters))
    }

    /// SIGKILL: no graceful shutdown, in-flight sends are lost mid-air.
    func kill() {
        process.kill()
    }

    /// SIGTERM, then wait for the graceful exit; returns false (and kills it) when it took more
    /// than `seconds`, recording the end of its log as a test issue (CI keeps no files).
    @discardableResult
    func stop(within seconds: Double = 15, sourceLocation: SourceLocation = #_sourceLocation) async -> Bool {
        let (exited, log) = await terminate(within: seconds)
        if !exited {
            Issue.record(
                "linkstr-push did not stop within \(seconds) s of SIGTERM; the end of its log:\n\(log.suffix(6_000))",
                sourceLocation: sourceLocation)
        }
        return exited
    }

    /// SIGTERM, then wait up to `seconds` for the exit (SIGKILL after that). Returns whether it
    /// exited in time, and its whole log, which is then removed. Polls with `Task.sleep`: a
    /// blocking wait would hold one of the few threads every test in the process shares.
    func terminate(within seconds: Double) async -> (exited: Bool, log: String) {
        process.signal(SIGTERM)
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        let exited = !process.isRunning
        process.kill()
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: logPath)
        return (exited, log)
    }

    func get(_ path: String) async throws -> (status: Int, body: String) {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = .GET
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(5))
        return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    /// A request signed in the linkstr dialect; its status.
    func send(_ keys: Keys, _ method: String, _ path: String, json: String) async throws -> Int {
        try await request(keys, method, path, json: json).status
    }

    /// A request signed in the linkstr dialect; its status and body.
    func request(_ keys: Keys, _ method: String, _ path: String, json: String) async throws -> (status: Int, body: String) {
        let event = HTTPAuth.linkstrEvent(
            keys: keys, method: method, path: path, body: Array(json.utf8), nonce: nil, createdAt: UnixTime.now())
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = .RAW(value: method)
        request.headers.add(name: "authorization", value: HTTPAuth.headerValue(for: event))
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: json))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    /// The value of one sample line in `GET /metrics`, 0 when absent.
    func metric(_ sample: String) async throws -> Double {
        let text = try await get("/metrics").body
        let line = text.split(separator: "\n").first { $0.hasPrefix(sample + " ") }
        return line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) } ?? 0
    }
}
