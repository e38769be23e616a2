/// Verifies events, checking each id's signature once: a process reading several relays gets
/// most events once per relay, and the BIP-340 check (tens of µs) is most of what an event costs.
///
/// Sound because the id is the SHA-256 of everything the signature covers, and it is recomputed
/// for every copy: a copy whose fields hash to an id whose signature was already verified carries
/// exactly the content that was signed, whatever its own `sig` says. A copy that does not hash to
/// its id is rejected as before, and a new id is always checked in full. Ids are kept by their
/// first 16 bytes (finding another event with the same 128-bit id prefix as a given one is a
/// second preimage, out of reach), in a ring: the oldest id goes when `capacity` is reached.
public final class VerifiedEventCache: Sendable {
    public enum Outcome: Sendable, Equatable {
        /// The id matched and the signature was checked now.
        case verified
        /// The id matched and was verified before (another relay's copy).
        case alreadyVerified
        case invalid(EventVerificationError)
    }

    private struct Key: Hashable {
        let high: UInt64
        let low: UInt64

        init(_ id: EventID) {
            (high, low) = id.bytes.withUnsafeBytes {
                ($0.loadUnaligned(fromByteOffset: 0, as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            }
        }
    }

    private struct State {
        var members: Set<Key> = []
        var ring: [Key] = []
        var next = 0
    }

    public let capacity: Int
    private let state = Locked(State())

    public init(capacity: Int = 65_536) {
        self.capacity = max(capacity, 1)
    }

    /// `NostrEvent.verify`, with its signature half skipped for an id verified before.
    public func check(_ event: NostrEvent) -> Outcome {
        do {
            try event.verifyID()
            let key = Key(event.id)
            if state.withLock({ $0.members.contains(key) }) { return .alreadyVerified }
            try event.verifySignature()
            remember(key)
            return .verified
        } catch {
            return .invalid(error)
        }
    }

    public var count: Int { state.withLock { $0.members.count } }

    private func remember(_ key: Key) {
        state.withLock { state in
            guard state.members.insert(key).inserted else { return }
            if state.ring.count < capacity {
                state.ring.append(key)
            } else {
                state.members.remove(state.ring[state.next])
                state.ring[state.next] = key
                state.next = (state.next + 1) % capacity
            }
        }
    }
}
