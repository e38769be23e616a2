import NIOHTTP2

/// Why a request got no answer; a sender treats every case as a connection failure (retried).
enum HTTP2ConnectionError: Error, Equatable {
    case closed
    case goingAway
    case streamReset(HTTP2ErrorCode)
    case malformedResponse
    case timedOut
}
