import Dispatch
public import NostrProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Looks a host name up with the system resolver (`getaddrinfo`), off the caller's thread: the
/// call blocks for as long as DNS takes, so the caller waits at most `timeout` and no longer than
/// it is not cancelled (the lookup itself cannot be stopped, and finishes on its own thread).
public enum HostResolver {
    /// Every address `host` resolves to (IPv4 and IPv6, each once); empty when it resolves to none.
    public static func addresses(of host: String, timeout: Duration = .seconds(5)) async throws(HostResolverError) -> [IPAddress] {
        // Whichever comes first answers: the lookup, the timeout, or the cancellation.
        let waiter = Locked<CheckedContinuation<Result<[IPAddress], HostResolverError>, Never>?>(nil)
        let answer: @Sendable (Result<[IPAddress], HostResolverError>) -> Void = { result in
            waiter.withLock { waiting in
                defer { waiting = nil }
                return waiting
            }?.resume(returning: result)
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                waiter.withLock { $0 = continuation }
                // Cancelled before the waiter was in place: `onCancel` found nobody to answer.
                if Task.isCancelled { answer(.failure(.cancelled)) }
                DispatchQueue.global().async { answer(lookUp(host)) }
                DispatchQueue.global().asyncAfter(deadline: .now() + timeout.inSeconds) { answer(.failure(.timedOut)) }
            }
        } onCancel: {
            answer(.failure(.cancelled))
        }
        return try result.get()
    }

    private static func lookUp(_ host: String) -> Result<[IPAddress], HostResolverError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
            hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else {
            // "No such name" is an answer (no addresses); anything else is a failed lookup.
            if status == EAI_NONAME { return .success([]) }
            return .failure(.lookUp(status))
        }
        defer { freeaddrinfo(list) }
        var addresses: [IPAddress] = []
        var next = list
        while let entry = next {
            next = entry.pointee.ai_next
            guard let socketAddress = entry.pointee.ai_addr else { continue }
            let address: IPAddress
            switch Int32(socketAddress.pointee.sa_family) {
            case AF_INET:
                let bytes = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                    withUnsafeBytes(of: pointer.pointee.sin_addr) { Array($0) }
                }
                address = .v4(bytes)
            case AF_INET6:
                let bytes = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                    withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
                }
                address = .v6(bytes)
            default:
                continue
            }
            if !addresses.contains(address) { addresses.append(address) }
        }
        return .success(addresses)
    }
}

/// A name lookup that failed (not one that found no address).
public struct HostResolverError: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String

    static func lookUp(_ status: Int32) -> HostResolverError {
        guard let text = gai_strerror(status) else { return HostResolverError(description: "name lookup failed (\(status))") }
        return HostResolverError(description: "name lookup failed: \(String(cString: text))")
    }

    static let timedOut = HostResolverError(description: "name lookup timed out")
    static let cancelled = HostResolverError(description: "name lookup cancelled")
}
