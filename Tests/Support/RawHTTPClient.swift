import Foundation
import NostrProtocol

/// HTTP/1.1 spoken byte for byte over a plain socket, for tests whose point is what an HTTP
/// library would tidy up before sending (`//v1/push`, `/v1/./push`, percent-escapes), from a chosen
/// loopback source address (each 127.0.0.0/8 address is a separate client to a per-address limit),
/// or a connection left half-open.
public final class RawHTTPClient: Sendable {
    public let socket: Int32
    /// What arrived after a response head in the same reads (a WebSocket frame the server sent at
    /// once), handed out by the next `drain()`.
    private let afterHead = Locked<[UInt8]>([])

    /// Connects to 127.0.0.1:`port` from `source` (any 127.x.y.z address); `receiveBuffer` sets
    /// the socket's receive buffer (and so the window the server may fill) before connecting.
    public init(port: Int, source: String = "127.0.0.1", receiveBuffer: Int32? = nil) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw FixtureError("socket: \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if var size = receiveBuffer { setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, connected == 0 else {
            // No close here: the instance is whole, so `deinit` runs as the init throws and closes
            // the socket. A second close could close a descriptor another thread has opened since.
            let reason = String(cString: strerror(errno))
            throw FixtureError("cannot connect to 127.0.0.1:\(port) from \(source): \(reason)")
        }
    }

    deinit { close(socket) }

    /// Ends the connection (both directions) now; the descriptor is freed with the client.
    public func hangUp() { shutdown(socket, Int32(SHUT_RDWR)) }

    /// Sends `bytes` as they are.
    public func write(_ text: String) throws {
        let bytes = Array(text.utf8)
        let sent = bytes.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { throw FixtureError("send: \(String(cString: strerror(errno)))") }
    }

    /// Asks for a WebSocket upgrade of `path` with `headers` besides the upgrade's own, and
    /// returns the response's status (101 when upgraded).
    public func upgradeToWebSocket(port: Int, path: String, headers: [String: String] = [:]) throws -> Int {
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        try write(request + "\r\n")
        return try readStatus()
    }

    /// Sends each of `messages` as a client's text frame (masked, with an all-zero key, so the
    /// payload goes as it is), all in one write.
    public func sendTextFrames(_ messages: [String]) throws {
        var bytes: [UInt8] = []
        for message in messages {
            let payload = Array(message.utf8)
            bytes.append(0x81)
            switch payload.count {
            case ..<126: bytes.append(0x80 | UInt8(payload.count))
            case ..<65_536: bytes += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
            default: bytes += [0x80 | 127] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: UInt64(payload.count) >> ($0 * 8)) }
            }
            bytes += [0, 0, 0, 0] + payload
        }
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw FixtureError("send: \(String(cString: strerror(errno)))") }
            offset += sent
        }
    }

    /// Reads until the response head is complete and returns its status code. Bytes after the head
    /// are kept for `drain()`.
    public func readStatus() throws -> Int {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let end = Array("\r\n\r\n".utf8)
        var headLength: Int?
        while headLength == nil {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else {
                // A response cut short still has its status line.
                if received.contains(UInt8(ascii: "\n")) { break }
                throw FixtureError("no response (\(count == 0 ? "closed" : String(cString: strerror(errno))))")
            }
            received += buffer[..<count]
            headLength = Self.index(of: end, in: received).map { $0 + end.count }
        }
        if let headLength { afterHead.withLock { $0 += received[headLength...] } }
        let line = String(decoding: received.prefix { $0 != UInt8(ascii: "\r") && $0 != UInt8(ascii: "\n") }, as: UTF8.self)
        let parts = line.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw FixtureError("not an HTTP status line: \(line)") }
        return status
    }

    private static func index(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return (0...(haystack.count - needle.count)).first { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    /// Reads until the server closes the connection (the whole of a `Connection: close` response).
    public func readToEnd() throws -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count == 0 { return received }
            guard count > 0 else { throw FixtureError("recv: \(String(cString: strerror(errno)))") }
            received += buffer[..<count]
        }
    }

    /// Reads whatever has arrived without waiting; `closed` once the server closed the connection.
    public func drain() -> (closed: Bool, received: [UInt8]) {
        var received = afterHead.withLock { kept in
            defer { kept.removeAll() }
            return kept
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                received += buffer[..<count]
                continue
            }
            if count == 0 { return (true, received) }
            return (errno != EAGAIN && errno != EWOULDBLOCK, received)
        }
    }

    /// One request on a fresh connection: `method path` with `Connection: close`; returns the status.
    public static func status(port: Int, source: String = "127.0.0.1", method: String = "POST", path: String, body: String = "{}") throws
        -> Int
    {
        let client = try RawHTTPClient(port: port, source: source)
        try client.write(
            "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
        return try client.readStatus()
    }
}
