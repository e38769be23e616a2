import Foundation
public import LinkstrWire
public import NostrProtocol

/// Opens gift wraps on every core: unwrapping (two signature checks, one or two ECDH, two
/// decryptions) is nearly all of ingest's cost, and wraps are independent of each other.
public struct WrapOpener: Sendable {
    public let keys: Keys
    public let cache: ConversationKeyCache
    /// Below this many wraps a batch is opened on the calling task (no fan-out overhead).
    public var parallelThreshold = 64

    public init(keys: Keys, cache: ConversationKeyCache = ConversationKeyCache()) {
        self.keys = keys
        self.cache = cache
    }

    public typealias Opened = Result<LinkstrMessage, LinkstrMessage.OpenError>

    /// One result per wrap, in input order.
    public func open(_ wraps: [NostrEvent], now: Int64 = UnixTime.now()) async -> [Opened] {
        let keys = keys, cache = cache
        func openSlice(_ slice: ArraySlice<NostrEvent>) -> [Opened] {
            slice.map { wrap in
                Result { () throws(LinkstrMessage.OpenError) in try LinkstrMessage.open(wrap, keys: keys, cache: cache, now: now) }
            }
        }
        let cores = max(ProcessInfo.processInfo.activeProcessorCount, 1)
        guard wraps.count >= parallelThreshold, cores > 1 else { return openSlice(wraps[...]) }
        let chunk = (wraps.count + cores - 1) / cores
        return await withTaskGroup(of: (Int, [Opened]).self) { group in
            for start in stride(from: 0, to: wraps.count, by: chunk) {
                let slice = wraps[start..<min(start + chunk, wraps.count)]
                group.addTask { (start, openSlice(slice)) }
            }
            var parts: [(Int, [Opened])] = []
            for await part in group { parts.append(part) }
            return parts.sorted { $0.0 < $1.0 }.flatMap(\.1)
        }
    }
}
