public import Foundation
import NostrProtocol

/// The last few push failures on every platform, newest first, for operators
/// (`GET /admin/status`, the console). Device tokens and endpoints are kept redacted.
public final class RecentPushFailures: Sendable {
    public struct Failure: Sendable, Equatable {
        public var at: Date
        public var platform: String
        public var status: Int
        public var reason: String
        public var outcome: String
        public var redactedToken: String

        package init(at: Date, platform: String, status: Int, reason: String, outcome: String, redactedToken: String) {
            self.at = at
            self.platform = platform
            self.status = status
            self.reason = reason
            self.outcome = outcome
            self.redactedToken = redactedToken
        }
    }

    private let capacity: Int
    private let failures = Locked<[Failure]>([])

    public init(capacity: Int) { self.capacity = capacity }

    public func record(_ failure: Failure) {
        failures.withLock { list in
            list.insert(failure, at: 0)
            if list.count > capacity { list.removeLast(list.count - capacity) }
        }
    }

    public var snapshot: [Failure] { failures.withLock { $0 } }
}
