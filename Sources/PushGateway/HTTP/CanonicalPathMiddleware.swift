package import Hummingbird

/// Refuses a request whose path is not spelled canonically, with 400, before it reaches a route.
///
/// The router is lenient: it skips empty segments, so `//v1/push` or `/v1//push` reach the same
/// handler as `/v1/push`, and other spellings (percent-escapes, dot segments) depend on the router
/// and the proxies in front. Anything that keys on the path (limits, exemptions, metrics, logs)
/// would then see a spelling it does not expect; refusing every non-canonical one closes that. Every path the
/// gateway serves is plain ASCII, so a canonical one is `/` followed by non-empty segments of
/// unreserved characters (RFC 3986 §2.3), none of them `.` or `..`, with no trailing slash.
package struct CanonicalPathMiddleware<Context: RequestContext>: RouterMiddleware {
    static var refusal: APIError { .badRequest("non-canonical request path") }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard Self.isCanonical(request.uri.path) else { throw Self.refusal }
        return try await next(request, context)
    }

    package static func isCanonical(_ path: String) -> Bool {
        let bytes = Array(path.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        var segmentLength = 0
        var segmentIsDots = true
        for byte in bytes.dropFirst() {
            if byte == UInt8(ascii: "/") {
                guard segmentLength > 0, !(segmentIsDots && segmentLength <= 2) else { return false }
                segmentLength = 0
                segmentIsDots = true
                continue
            }
            guard isUnreserved(byte) else { return false }
            segmentLength += 1
            segmentIsDots = segmentIsDots && byte == UInt8(ascii: ".")
        }
        return segmentLength > 0 && !(segmentIsDots && segmentLength <= 2)
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}
