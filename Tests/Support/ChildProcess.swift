public import Foundation

/// A child process started with `posix_spawn` in its own process group.
///
/// Not Foundation's `Process`: its `waitUntilExit` spins a run loop and can hang when called from
/// a Swift concurrency thread, and it cannot kill a whole process group (a relay running as a
/// gunicorn master with worker children must die as a whole, like a crashed host).
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    private let lock = NSLock()
    private var exitStatus: Int32?

    /// Starts `executable` with `arguments`; stdin is /dev/null, stdout and stderr go to `logPath`
    /// (appended) or /dev/null.
    public init(
        executable: String, arguments: [String], logPath: String? = nil, environment: [String: String]? = nil, unblockSignals: Bool = false
    ) throws {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // `unblockSignals`: an empty signal mask, for a child a test signals (SIGUSR1 to
        // freeze_proxy.py). Otherwise the child inherits the mask of the spawning thread, a
        // dispatch worker that blocks most signals, and such a signal stays pending forever.
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | (unblockSignals ? POSIX_SPAWN_SETSIGMASK : 0)))
        posix_spawnattr_setpgroup(&attributes, 0)
        if unblockSignals {
            var noSignalsBlocked = sigset_t()
            sigemptyset(&noSignalsBlocked)
            posix_spawnattr_setsigmask(&attributes, &noSignalsBlocked)
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else: SwiftNIO opens its sockets without close-on-exec, so a child would hold
        // a copy of every socket the test process had open. A relay that closes a connection
        // then never reaches the client (the socket stays up until the child exits), and a
        // closed listener keeps its port bound.
        // (glibc 2.34 and later; looked up at run time because Glibc's module does not export it.)
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
            _ = unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, 3)
        }

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let env = environment ?? ProcessInfo.processInfo.environment
        let envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in envp { free(pointer) } }

        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else { throw FixtureError("cannot start \(executable): \(String(cString: strerror(result)))") }
        self.pid = pid
    }

    /// True until the process has exited (reaps it when it has).
    public var isRunning: Bool {
        lock.withLock {
            if exitStatus != nil { return false }
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == 0 { return true }
            exitStatus = status
            return false
        }
    }

    /// Sends `signal` to the whole process group, unless the leader has been reaped: its pid, the
    /// group's id, can then be handed to any new process (on a busy machine within seconds), and
    /// the signal would kill a stranger: another test's relay or gateway, or the shell running
    /// the tests. The lock keeps `isRunning` from reaping between the check and the signal.
    public func signal(_ signal: Int32) {
        lock.withLock {
            guard exitStatus == nil else { return }
            _ = Foundation.kill(-pid, signal)
        }
    }

    /// SIGKILL to the group, then reaps the leader.
    public func kill() {
        signal(SIGKILL)
        lock.withLock {
            guard exitStatus == nil else { return }
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
            exitStatus = status
        }
    }

    deinit { kill() }

    /// The exit code once the process ended (nil while running or when killed by a signal).
    public var exitCode: Int32? {
        guard !isRunning else { return nil }
        return lock.withLock { exitStatus.flatMap { ($0 & 0x7f) == 0 ? ($0 >> 8) & 0xff : nil } }
    }

    /// Runs `executable` to completion (killed after `timeout`) and returns its exit code and
    /// combined output.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        timeout: Duration = .seconds(60)
    ) async throws -> (code: Int32, output: String) {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("run-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        let process = try ChildProcess(executable: executable, arguments: arguments, logPath: log, environment: environment)
        let deadline = ContinuousClock.now + timeout
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                process.kill()
                throw FixtureError("\(executable) \(arguments.joined(separator: " ")) did not finish in \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return (process.exitCode ?? -1, output)
    }

    /// A product built next to the test bundle (`swift build --build-tests` builds them all).
    /// The process's resident memory (VmRSS), in bytes.
    public var residentBytes: Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        return kilobytes * 1024
    }

    /// With `LINKSTR_BIN_DIR` set (scripts/sanitize.sh: sanitized release builds), the
    /// executables are taken from there instead: the suites that start processes then run the
    /// binaries a user runs, built in another configuration than the test bundle.
    public static func builtProduct(_ name: String) throws -> String {
        if let override = ProcessInfo.processInfo.environment["LINKSTR_BIN_DIR"], !override.isEmpty {
            let path = URL(fileURLWithPath: override).appendingPathComponent(name).path
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw FixtureError("\(name) not found in LINKSTR_BIN_DIR (\(override))")
            }
            return path
        }
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [directory, directory.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        throw FixtureError("\(name) not found next to \(directory.path); build with `swift build --build-tests`")
    }
}

public struct FixtureError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
