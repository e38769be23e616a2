import NostrProtocol

/// Group commit for device registrations: requests that arrive while a group is being written
/// wait and go together in the next one, one statement and one commit per group
/// (`RegisterDevicesStatement`). Under load this divides PostgreSQL's per-statement and per-commit
/// cost, and the gateway's per-query client work, by the group size; an idle gateway writes a
/// lone registration at once, with no timer in the way.
///
/// One group is written at a time while fewer registrations than a full group's worth
/// (`maxGroupSize`) wait; up to `maxConcurrentGroups` are in flight only while that many wait. A
/// burst so gathers into groups instead of taking every pool connection one registration at a
/// time, and a steady load gathers into groups as large as it can make: a second group started
/// beside the first would split what gathers while one group is written into two statements of
/// half the size. A group in flight keeps its device tokens out of the others
/// (`RegistrationQueue`).
package final class RegistrationBatcher: Sendable {
    package typealias Outcome = Result<Bool, any Error>
    /// Applies a group and answers each registration: applied (true), replayed (false) or failed.
    /// Throwing fails the whole group.
    package typealias Apply = @Sendable ([PendingRegistration]) async throws -> [Outcome]

    private struct State {
        var queue = RegistrationQueue<CheckedContinuation<Bool, any Error>>()
        var groupsInFlight = 0
        /// The device tokens of the groups being written.
        var tokensInFlight = Set<String>()
    }

    private let state = Locked(State())
    private let apply: Apply
    let maxGroupSize: Int
    let maxConcurrentGroups: Int

    /// Groups in flight at most by default: a second one while a full group waits.
    package static let defaultConcurrentGroups = 2
    /// Registrations in one statement at most by default.
    package static let defaultMaxGroupSize = 64

    package init(maxGroupSize: Int = defaultMaxGroupSize, maxConcurrentGroups: Int = defaultConcurrentGroups, apply: @escaping Apply) {
        precondition(maxGroupSize > 0 && maxConcurrentGroups > 0)
        self.maxGroupSize = maxGroupSize
        self.maxConcurrentGroups = maxConcurrentGroups
        self.apply = apply
    }

    /// Registrations waiting for a group.
    package var queued: Int { state.withLock { $0.queue.count } }

    /// Writes `registration` with the next group; true when applied, false when its replay key had
    /// been used before. A cancelled caller still queued is withdrawn and gets `CancellationError`.
    package func register(_ registration: PendingRegistration) async throws -> Bool {
        let id = state.withLock { $0.queue.reserveID() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
                let startGroup = state.withLock { state -> Bool? in
                    // The cancellation handler may already have run and found nothing to withdraw.
                    if Task.isCancelled { return nil }
                    state.queue.append(registration, id: id, waiter: continuation)
                    guard Self.writes(groupsInFlight: state.groupsInFlight + 1, queued: state.queue.count, maxGroupSize: maxGroupSize),
                        state.groupsInFlight < maxConcurrentGroups
                    else { return false }
                    state.groupsInFlight += 1
                    return true
                }
                switch startGroup {
                case nil: continuation.resume(throwing: CancellationError())
                case true?: Task { await self.writeGroups() }
                case false?: break
                }
            }
        } onCancel: {
            state.withLock { $0.queue.remove(id: id) }?.waiter.resume(throwing: CancellationError())
        }
    }

    /// Whether one of `groupsInFlight` writers (itself included) takes a group from `queued`
    /// waiting registrations: the only writer takes whatever waits, another one only while a full
    /// group's worth waits. A writer that does not take one stops; the one left in flight takes
    /// what it left.
    package static func writes(groupsInFlight: Int, queued: Int, maxGroupSize: Int) -> Bool {
        queued > 0 && (groupsInFlight == 1 || queued >= maxGroupSize)
    }

    /// Writes groups until the queue is empty, or until a group smaller than full is left to
    /// another writer in flight. A group that fails as a whole fails everything queued behind it
    /// too: those would wait only to meet the same database.
    private func writeGroups() async {
        while true {
            let group = state.withLock { state in
                // Empty when everything waiting is for a token another writer's group holds: that
                // writer takes it after.
                let group =
                    Self.writes(groupsInFlight: state.groupsInFlight, queued: state.queue.count, maxGroupSize: maxGroupSize)
                    ? state.queue.takeBatch(limit: maxGroupSize, busyTokens: state.tokensInFlight) : []
                if group.isEmpty {
                    state.groupsInFlight -= 1
                } else {
                    for entry in group { state.tokensInFlight.insert(entry.registration.deviceToken) }
                }
                return group
            }
            guard !group.isEmpty else { return }
            defer { state.withLock { state in for entry in group { state.tokensInFlight.remove(entry.registration.deviceToken) } } }
            do {
                let outcomes = try await apply(group.map(\.registration))
                precondition(outcomes.count == group.count, "one outcome per registration")
                for (entry, outcome) in zip(group, outcomes) { entry.waiter.resume(with: outcome) }
            } catch {
                let behind = state.withLock { $0.queue.removeAll() }
                for entry in group + behind { entry.waiter.resume(throwing: error) }
            }
        }
    }
}
