public import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
public import NostrProtocol

/// Reads the sandbox's own endpoints (`/stats`, `/deliveries`, the other faces' `stats` and
/// subscriptions) over HTTP/2 with its CA.
public struct SandboxClient: Sendable {
    public let baseURL: String
    public let client: HTTPClient

    public init(baseURL: String, caFile: String) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(caFile)]
        self.baseURL = baseURL
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: HTTPClient.Configuration(tlsConfiguration: tls))
    }

    public func get(_ path: String) async throws -> JSONValue {
        let response = try await client.execute(HTTPClientRequest(url: baseURL + path), timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 30)
        return try JSONValue(parsing: Array(body.readableBytesView))
    }

    /// POSTs to one of the sandbox's own endpoints (a Web Push subscription) and reads the JSON answer.
    public func post(_ path: String) async throws -> JSONValue {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = .POST
        let response = try await client.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 20)
        return try JSONValue(parsing: Array(body.readableBytesView))
    }

    /// Push requests the sandbox has answered so far (the sequence number of the last record).
    public func answered() async throws -> Int {
        guard case .integer(let count)? = try await get("/stats")["answered"] else { return 0 }
        return Int(count)
    }

    /// Records answered with 200 after sequence `sequence`.
    public func records(afterSequence sequence: Int) async throws -> [JSONValue] {
        guard case .array(let records) = try await get("/deliveries?after=\(sequence)&status=200") else { return [] }
        return records
    }

    public func shutdown() async throws { try await client.shutdown() }
}
