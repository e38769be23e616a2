public import Foundation
public import NostrProtocol

/// Runs `scripts/interop/rust_nostr_peer.py` (rust-nostr through its Python bindings, installed
/// into `.venv` by `scripts/test.sh`) with a batch of requests and returns its answers.
public enum RustNostrPeer {
    public static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    public static var python: String {
        ProcessInfo.processInfo.environment["LINKSTR_PYTHON"] ?? repositoryRoot.appendingPathComponent(".venv/bin/python").path
    }

    /// Interop runs unless explicitly skipped; a missing virtualenv is a failure with a clear message.
    public static var enabled: Bool { ProcessInfo.processInfo.environment["LINKSTR_SKIP_INTEROP"] != "1" }

    public struct PeerError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Sends `requests` (each a JSON object) and returns one result per request; a request the
    /// peer failed becomes `.failure` with its message.
    ///
    /// The peer is a Python process; waiting for it happens on a thread of its own, so the few
    /// threads every test of the process shares are not held for the second it takes.
    public static func run(_ requests: [JSONValue]) async throws -> [Result<JSONValue, PeerError>] {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result { try runBlocking(requests) })
            }.start()
        }
    }

    /// Runs `scripts/interop/<script>` with `arguments` (a script that talks to relays over the
    /// network as a rust-nostr client) and returns the JSON object it prints.
    public static func script(_ script: String, _ arguments: [String]) async throws -> JSONValue {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result {
                        let process = Process()
                        process.executableURL = URL(fileURLWithPath: python)
                        process.arguments = [repositoryRoot.appendingPathComponent("scripts/interop/\(script)").path] + arguments
                        let output = Pipe(), errors = Pipe()
                        process.standardOutput = output
                        process.standardError = errors
                        try process.run()
                        let stdout = output.fileHandleForReading.readDataToEndOfFile()
                        let stderr = errors.fileHandleForReading.readDataToEndOfFile()
                        process.waitUntilExit()
                        guard process.terminationStatus == 0 else {
                            let message = String(decoding: stderr, as: UTF8.self)
                            throw PeerError(description: "\(script) exited \(process.terminationStatus): \(message)")
                        }
                        return try JSONValue(parsing: [UInt8](stdout))
                    })
            }.start()
        }
    }

    private static func runBlocking(_ requests: [JSONValue]) throws -> [Result<JSONValue, PeerError>] {
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw PeerError(description: "rust-nostr peer needs \(python); run scripts/test.sh (it creates .venv with nostr-sdk)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [repositoryRoot.appendingPathComponent("scripts/interop/rust_nostr_peer.py").path]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let request = JSONValue.array(requests).serialized
        // Write and read concurrently so a large batch cannot deadlock on full pipes.
        let writer = Thread {
            input.fileHandleForWriting.write(Data(request.utf8))
            try? input.fileHandleForWriting.close()
        }
        writer.start()
        let stdout = output.fileHandleForReading.readDataToEndOfFile()
        let stderr = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw PeerError(description: "peer exited \(process.terminationStatus): \(String(decoding: stderr, as: UTF8.self))")
        }
        guard case .array(let responses) = try JSONValue(parsing: [UInt8](stdout)), responses.count == requests.count else {
            throw PeerError(description: "peer returned an unexpected answer")
        }
        return responses.map { response in
            if response["ok"] == .bool(true), let result = response["result"] { return .success(result) }
            return .failure(PeerError(description: response["error"]?.stringValue ?? "unknown error"))
        }
    }

    /// One request whose success is required.
    public static func call(_ op: String, _ fields: [String: JSONValue]) async throws -> JSONValue {
        var object = fields
        object["op"] = .string(op)
        return try await run([.object(object)])[0].get()
    }
}

extension JSONValue {
    public static func tags(_ tags: [[String]]) -> JSONValue { .array(tags.map { .array($0.map(JSONValue.string)) }) }
}
