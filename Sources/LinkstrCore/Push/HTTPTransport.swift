public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// How the registrar reaches the gateway: one request in, status and body out. `URLSessionTransport`
/// is the real one (URLSession on Apple platforms and on Linux); tests may wrap it to inject faults.
public protocol HTTPTransport: Sendable {
    func send(_ request: URLRequest) async throws -> (status: Int, body: Data)
}

public struct URLSessionTransport: HTTPTransport {
    public let session: URLSession

    public init(session: URLSession = .shared) {
        self.session = session
    }

    public func send(_ request: URLRequest) async throws -> (status: Int, body: Data) {
        let (data, response) = try await session.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }
}
