public import Foundation
import NostrProtocol

/// Configuration errors per platform since the instance started (a push service refused the
/// gateway's own credentials or settings): how many, and the last one, for `GET /admin/status`.
/// One bad setting makes every push to that platform fail this way while devices stay put, so
/// an operator must see it without reading logs.
public final class ConfigurationErrorTally: Sendable {
    public struct Entry: Sendable, Equatable {
        public var count: Int
        public var lastReason: String
        public var lastAt: Date
    }

    private let entries = Locked<[String: Entry]>([:])

    public init() {}

    public func record(platform: String, reason: String, at date: Date = Date()) {
        entries.withLock { entries in
            entries[platform] = Entry(count: (entries[platform]?.count ?? 0) + 1, lastReason: reason, lastAt: date)
        }
    }

    public var snapshot: [String: Entry] { entries.withLock { $0 } }
}
