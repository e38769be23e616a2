public import Foundation
import NostrProtocol

/// The last few APNs failures, newest first, for operators (`GET /admin/status`). Device tokens
/// are kept redacted.
public final class RecentAPNsFailures: Sendable {
    public struct Failure: Sendable, Equatable {
        public var at: Date
        public var status: Int
        public var reason: String
        public var outcome: String
        public var redactedToken: String

        package init(at: Date, status: Int, reason: String, outcome: String, redactedToken: String) {
            self.at = at
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
