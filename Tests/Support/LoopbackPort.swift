import Foundation
import NostrProtocol

/// Loopback ports for the fixtures and tests that start servers.
public enum LoopbackPort {
    /// True when something listens on `port` on 127.0.0.1.
    public static func accepts(_ port: Int) -> Bool {
        onLoopback(port) { connect($0, $1, $2) }
    }

    /// A port nothing listens on right now (bound once, then released).
    ///
    /// Ports come from 20000–31999, below the kernel's ephemeral range (32768–60999), and each is
    /// handed out once per process. Asking the kernel for port 0 instead gives an ephemeral port,
    /// which an outgoing connection (a PostgreSQL or HTTP client in a parallel test) may take as
    /// its source port before the server binds it: CI saw a gateway exit with "Address already in
    /// use" that way.
    public static func free() throws -> Int {
        for _ in 0..<reserved.count {
            let port = cursor.withLock { next -> Int in
                defer { next = (next + 1 - reserved.lowerBound) % reserved.count + reserved.lowerBound }
                return next
            }
            if canBind(port) { return port }
        }
        throw FixtureError("no free loopback port in \(reserved)")
    }

    private static let reserved = 20_000..<32_000
    /// Starts at a per-process offset so two test processes on one machine rarely meet.
    private static let cursor = Locked(reserved.lowerBound + Int(getpid()) * 7_919 % reserved.count)

    private static func canBind(_ port: Int) -> Bool {
        onLoopback(port) { bind($0, $1, $2) }
    }

    /// Applies `call` (connect or bind) to a fresh TCP socket and 127.0.0.1:`port`, then closes
    /// the socket; true when the call succeeded.
    private static func onLoopback(_ port: Int, _ call: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}
