import AsyncHTTPClient
import NIOCore
import NIOSSL
import NostrProtocol

/// Reads the APNs sandbox's own endpoints (`/stats`, `/deliveries`) with its CA.
struct SandboxReader: Sendable {
    let baseURL: String
    let client: HTTPClient

    init(baseURL: String, caFile: String) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(caFile)]
        self.baseURL = baseURL
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(tlsConfiguration: tls))
    }

    private func get(_ path: String) async throws -> JSONValue {
        let response = try await client.execute(HTTPClientRequest(url: baseURL + path), timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 30)
        return try JSONValue(parsing: Array(body.readableBytesView))
    }

    /// Pushes answered so far (the sequence number of the last record).
    func answered() async throws -> Int {
        guard case .integer(let count)? = try await get("/stats")["answered"] else { return 0 }
        return Int(count)
    }

    /// Answered with 200 after sequence `after`.
    func records(after: Int) async throws -> [JSONValue] {
        guard case .array(let records) = try await get("/deliveries?after=\(after)&status=200") else { return [] }
        return records
    }
}
