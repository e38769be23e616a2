import Foundation
import Hummingbird
import Logging
import PostgresNIO
import PushGateway
import TestSupport
import Testing

@Suite struct OpenAPITests {
    /// `METHOD /path` pairs declared under `paths:` in the document.
    static func documentedRoutes() -> Set<String> {
        var routes = Set<String>()
        var currentPath: String?
        var inPaths = false
        for line in OpenAPIDocument.yaml.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "paths:" {
                inPaths = true
                continue
            }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                currentPath = String(line.dropFirst(2).dropLast())
            } else if let path = currentPath, line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":") {
                let method = line.trimmingCharacters(in: .whitespaces).dropLast().uppercased()
                routes.insert("\(method) \(path)")
            }
        }
        return routes
    }

    @Test func documentMatchesTheRouterExactly() throws {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let client = PostgresClient(configuration: .init(host: "127.0.0.1", username: "x", password: nil, database: "x", tls: .disable))
        let configuration = GatewayHarness.configuration(DatabaseURL(host: "127.0.0.1", username: "x", database: "x"))
        let api = GatewayAPI(store: GatewayStore(client: client, logger: logger), configuration: configuration, latestMigration: 1)
        let router = buildRouter(api: api)
        let served = Set(router.routes.map { "\($0.method.rawValue) \($0.path)" })
        let documented = Self.documentedRoutes()
        #expect(served.count == 16)
        #expect(documented == served, "undocumented: \(served.subtracting(documented)); not served: \(documented.subtracting(served))")
    }

    @Test func documentIsOpenAPI31WithEverySignedRouteSecured() {
        let yaml = OpenAPIDocument.yaml
        #expect(yaml.hasPrefix("openapi: 3.1.0\n"))
        #expect(!yaml.contains("\t"), "YAML indentation is spaces only")
        // Every /v1 route declares the Nostr scheme and the 401 answer, but the VAPID key's: a
        // public key a web app fetches before it has anything to sign with.
        let v1Blocks = yaml.components(separatedBy: "\n  /v1/").dropFirst()
        #expect(v1Blocks.count == 8)
        for block in v1Blocks where !block.hasPrefix("webpush/vapid-public-key:") {
            let route = block.components(separatedBy: "\n  /").first ?? block
            #expect(route.contains("security: [{nostr: []}]"), "\(route.prefix(40))")
            #expect(route.contains("\"401\""), "\(route.prefix(40))")
        }
    }
}

@Suite struct OpenAPIValidationTests {
    /// Validates the document with openapi-spec-validator (installed into .venv by scripts/test.sh).
    @Test func documentValidatesAgainstTheOpenAPISchema() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let python = ProcessInfo.processInfo.environment["LINKSTR_PYTHON"] ?? root.appendingPathComponent(".venv/bin/python").path
        guard FileManager.default.isExecutableFile(atPath: python) else {
            Issue.record("needs \(python) with openapi-spec-validator: run scripts/test.sh")
            return
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("linkstr-openapi-\(UUID().uuidString).yaml")
        try OpenAPIDocument.yaml.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let (code, text) = try await ChildProcess.run(
            python,
            [
                "-c",
                "import sys, yaml; from openapi_spec_validator import validate; validate(yaml.safe_load(open(sys.argv[1]))); print('ok')",
                file.path,
            ], timeout: .seconds(120))
        #expect(code == 0, "\(text)")
        #expect(text.contains("ok"))
    }
}
