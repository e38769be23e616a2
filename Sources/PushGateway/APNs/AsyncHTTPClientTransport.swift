import AsyncHTTPClient
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL

/// `APNS_TRANSPORT=async-http-client`: one AsyncHTTPClient per connection (each holds one HTTP/2
/// connection per host, via ALPN, and never opens more streams than the server allows).
struct AsyncHTTPClientTransport: APNsTransport {
    let clients: [HTTPClient]
    let requestTimeout: TimeAmount
    let logger: Logger

    init(tls: TLSConfiguration, connections: Int, requestTimeout: TimeAmount, logger: Logger) {
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow, timeout: .init(connect: .seconds(10), read: requestTimeout))
        configuration.httpVersion = .automatic
        // Apple treats connection churn as abuse: keep idle connections for a long time.
        configuration.connectionPool = .init(idleTimeout: .minutes(30))
        clients = (0..<max(1, connections)).map { _ in
            HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration, backgroundActivityLogger: logger)
        }
        self.requestTimeout = requestTimeout
        self.logger = logger
    }

    func send(_ request: HTTP2Request) async throws -> HTTP2Response {
        var http = HTTPClientRequest(url: "https://" + request.endpoint.authority + request.path)
        http.method = .POST
        for (name, value) in request.headers { http.headers.add(name: name, value: value) }
        http.body = .bytes(request.body)
        let client = clients[request.slot % clients.count]
        let started = NIODeadline.now()
        let response = try await client.execute(http, deadline: .now() + requestTimeout, logger: logger)
        let body = try await response.body.collect(upTo: 16 * 1024)
        return HTTP2Response(status: Int(response.status.code), body: body, elapsed: .now() - started)
    }

    func shutdown() async {
        for client in clients { try? await client.shutdown() }
    }
}
