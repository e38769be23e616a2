public import GatewayWire
public import Hummingbird
import NIOCore
import NostrProtocol

/// An error answered as `{"error": message}` with its status. Messages are the ones the linkstr
/// app knows (see docs/linkstr-wire.md §4) or equally plain ones; they never carry
/// database or crypto internals.
public struct APIError: Error, Sendable, Equatable, HTTPResponseError {
    public let status: HTTPResponse.Status
    public let message: String
    public var headers: HTTPFields = [:]
    /// For a refused `Authorization`: why, as a metrics label (`linkstr_auth_failures_total`).
    public var authFailureCode: String?

    public init(_ status: HTTPResponse.Status, _ message: String) {
        self.status = status
        self.message = message
    }

    public static func badRequest(_ message: String) -> APIError { APIError(.badRequest, message) }
    /// A body GatewayWire refused: 400 with its message.
    public static func badRequest(_ error: RequestBodyError) -> APIError { APIError(.badRequest, error.message) }
    public static func unauthorized(_ message: String, code: String = "other") -> APIError {
        var error = APIError(.unauthorized, message)
        error.authFailureCode = code
        return error
    }

    /// Every admin route without `ADMIN_TOKEN`.
    public static let adminDisabled = APIError(.notFound, "admin routes are disabled (set ADMIN_TOKEN)")
    public static let replayed = APIError.unauthorized("authorization was already used (replayed nonce or event)", code: "replayed")

    /// 429 with `Retry-After` in whole seconds (at least 1).
    public static func rateLimited(retryAfter: Duration) -> APIError {
        var error = APIError(.tooManyRequests, "rate limited")
        let seconds = max(1, retryAfter.components.seconds + (retryAfter.components.attoseconds > 0 ? 1 : 0))
        error.headers[.retryAfter] = String(seconds)
        return error
    }

    public static let invalidJSON = APIError.badRequest(RequestBodyError.invalidJSON)
    public static let unreadableBody = APIError.badRequest("failed to read request body")
    public static let storage = APIError(.internalServerError, "storage error")

    public static func == (lhs: APIError, rhs: APIError) -> Bool { lhs.status == rhs.status && lhs.message == rhs.message }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = self.headers
        headers[.contentType] = "application/json"
        return Response(
            status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: JSONBody.object(["error": .string(message)]))))
    }
}
