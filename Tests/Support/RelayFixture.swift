public import Foundation

/// A real relay nobody here wrote, `nostr-relay` from PyPI (installed into `.venv` by
/// scripts/lib/setup.sh), on a loopback port, with its own SQLite file. It can be stopped and
/// started again on the same port (and the same data) to test reconnects.
public final class RelayFixture: @unchecked Sendable {
    public let port: Int
    public let directory: URL
    private var process: ChildProcess?
    private let lock = NSLock()

    public var url: String { "ws://127.0.0.1:\(port)" }

    /// `validateSignatures: false` runs a relay that stores and forwards whatever it is sent
    /// (a careless or hostile relay), for tests of what the client does with bad events.
    /// Which relay runs: `nostr-relay` (Python, SQLite) or rust-nostr's `LocalRelay` (in memory,
    /// optionally demanding NIP-42 AUTH for `read`, `write` or `both`).
    public enum Implementation: Sendable {
        case nostrRelay
        /// `maxSubscriptions`: REQs beyond it are answered with `CLOSED`.
        case rustNostr(auth: String?, maxSubscriptions: Int? = nil)
    }

    public let implementation: Implementation

    public init(port: Int? = nil, validateSignatures: Bool = true, implementation: Implementation = .nostrRelay) throws {
        self.implementation = implementation
        self.port = try port ?? LoopbackPort.free()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let config = """
            DEBUG: false
            relay_name: linkstr test relay
            storage:
              sqlalchemy.url: sqlite+aiosqlite:///\(directory.path)/nostr.sqlite3
              validators: \(validateSignatures ? "[nostr_relay.validators.is_signed]" : "[]")
            gunicorn:
              bind: 127.0.0.1:\(self.port)
              workers: 1
              loglevel: warning
            purple:
              host: 127.0.0.1
              port: \(self.port)
              workers: 1
              disable_compression: true
            authentication:
              enabled: false
            message_timeout: 1800
            subscription_limit: 64
            max_limit: 6000
            """
        try config.write(to: directory.appendingPathComponent("config.yaml"), atomically: true, encoding: .utf8)
    }

    public static func executable() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let path = ProcessInfo.processInfo.environment["LINKSTR_NOSTR_RELAY"] ?? root.appendingPathComponent(".venv/bin/nostr-relay").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw FixtureError("nostr-relay not found at \(path): run the tests through scripts/test.sh, which installs it")
        }
        return path
    }

    /// Starts the relay and waits until it accepts connections. Its output goes to relay.log in
    /// its directory.
    public func start() async throws {
        let process: ChildProcess
        switch implementation {
        case .nostrRelay:
            process = try ChildProcess(
                executable: try Self.executable(),
                arguments: ["-c", directory.appendingPathComponent("config.yaml").path, "serve"],
                logPath: directory.appendingPathComponent("relay.log").path)
        case .rustNostr(let auth, let maxSubscriptions):
            process = try ChildProcess(
                executable: RustNostrPeer.python,
                arguments: [RustNostrPeer.repositoryRoot.appendingPathComponent("scripts/interop/rust_nostr_relay.py").path, String(port)]
                    + (auth.map { ["--auth", $0] } ?? []) + (maxSubscriptions.map { ["--max-reqs", String($0)] } ?? []),
                logPath: directory.appendingPathComponent("relay.log").path)
        }
        lock.withLock { self.process = process }
        // A Python relay imports its web stack before it listens: under a second on an idle
        // machine, past 15 s on two cores that also build and run the suite (a fresh-clone CI run
        // saw it). Waiting longer costs nothing when it is fast.
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if LoopbackPort.accepts(port) { return }
            guard process.isRunning else {
                // The directory goes with the fixture: the error carries the log's end.
                let log = (try? String(contentsOf: directory.appendingPathComponent("relay.log"), encoding: .utf8)) ?? ""
                throw FixtureError("nostr-relay on port \(port) exited early; its log ends: \(log.suffix(800))")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw FixtureError("nostr-relay did not listen on \(port) within 60 s")
    }

    /// SIGKILL to the relay and its workers, like a crash; returns once the port is closed.
    public func kill() {
        guard let process = lock.withLock({ self.process }) else { return }
        process.kill()
        for _ in 0..<500 where LoopbackPort.accepts(port) { usleep(10_000) }
        lock.withLock { self.process = nil }
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(at: directory)
    }
}
