import Foundation
import HummingbirdTesting
import NostrProtocol
import TestSupport
import Testing

/// Property-based fuzzing of the HTTP API from its own OpenAPI document with schemathesis (PyPI):
/// generated and mutated requests for every route; no answer may be a 5xx, and every status
/// code must be one the document lists.
@Suite struct SchemathesisFuzzTests {
    @Test func theAPIAnswersEveryGeneratedRequestWithoutA5xx() async throws {
        let schemathesis = RustNostrPeer.repositoryRoot.appendingPathComponent(".venv/bin/schemathesis").path
        try #require(FileManager.default.isExecutableFile(atPath: schemathesis), "run scripts/test.sh: it installs schemathesis into .venv")
        try await GatewayHarness.run { gateway in
            let port = try #require(gateway.client.port)
            let (code, output) = try await ChildProcess.run(
                schemathesis,
                [
                    "run", "http://127.0.0.1:\(port)/openapi.yaml",
                    "--checks", "not_a_server_error,status_code_conformance,content_type_conformance",
                    "--phases", "examples,coverage,fuzzing", "--max-examples", "40", "--request-timeout", "10", "--seed", "1",
                    "--suppress-health-check", "all", "--no-color",
                ],
                environment: ProcessInfo.processInfo.environment.merging([
                    // Every /v1/ request signed (linkstr dialect) by scripts/interop/schemathesis_hooks.py.
                    "SCHEMATHESIS_HOOKS": "scripts.interop.schemathesis_hooks", "PYTHONPATH": RustNostrPeer.repositoryRoot.path,
                    "LINKSTR_FUZZ_SECRET": Keys.generate().secretKey.exportHex(), "NO_COLOR": "1",
                ]) { $1 },
                timeout: .seconds(600))
            #expect(code == 0, "\(output.suffix(4000))")
            #expect(!output.contains("Server error"), "\(output.suffix(4000))")
            // Signing works: only the admin routes (the bearer token or the console's sign-in, not
            // Nostr auth) saw nothing but 401s.
            #expect(output.contains("401 Unauthorized (3 operations)"), "\(output.suffix(4000))")
            for route in ["GET /admin\n", "GET /admin/status", "POST /admin/login"] {
                #expect(output.contains("- " + route), "\(output.suffix(4000))")
            }
            #expect(output.contains(" passed") && !output.contains("errored"), "\(output.suffix(4000))")
        }
    }
}
