package import Foundation
package import GatewayWire
import WebPush

/// One `POST /v1/devices/register`, ready for the database: its replay key and the device row.
package struct PendingRegistration: Sendable, Equatable {
    var pubkey: String
    package var replayKey: String
    var replayExpires: Date
    /// The device's identity (`PushDestination.address`).
    package var deviceToken: String
    var platform: String
    /// APNs only.
    var environment: String?
    /// `alert` or, for an APNs VoIP token, `voip`.
    var pushType: String
    /// A subscription's keys, base64url.
    var p256dh: String?
    var authSecret: String?
    var topic: String
    var relayWatch: Bool
    /// Normal-form relay URLs (`RelayURL.description`).
    var relays: [String]

    package init(
        pubkey: String, replayKey: String, replayExpires: Date, deviceToken: String, platform: String = "apns", environment: String?,
        pushType: String = "alert", p256dh: String? = nil, authSecret: String? = nil, topic: String, relayWatch: Bool,
        relays: [String] = []
    ) {
        self.pubkey = pubkey
        self.replayKey = replayKey
        self.replayExpires = replayExpires
        self.deviceToken = deviceToken
        self.platform = platform
        self.environment = environment
        self.pushType = pushType
        self.p256dh = p256dh
        self.authSecret = authSecret
        self.topic = topic
        self.relayWatch = relayWatch
        self.relays = relays
    }

    /// The row `destination` is stored as.
    package init(
        registering destination: PushDestination, pubkey: String, replayKey: String, replayExpires: Date, topic: String, relayWatch: Bool,
        relays: [String]
    ) {
        var environment: String?
        var pushType = APNsTokenKind.alert.rawValue
        if case .apns(_, let apnsEnvironment, let kind) = destination {
            environment = apnsEnvironment.rawValue
            pushType = kind.rawValue
        }
        self.init(
            pubkey: pubkey, replayKey: replayKey, replayExpires: replayExpires, deviceToken: destination.address,
            platform: destination.platform.rawValue, environment: environment, pushType: pushType, p256dh: destination.keys?.p256dh,
            authSecret: destination.keys?.auth, topic: topic, relayWatch: relayWatch, relays: relays)
    }
}

/// Registrations waiting for the next group commit, in arrival order: a pure value, so the batch
/// rules are tested without a database.
///
/// A batch never holds two registrations of the same device token or the same replay key. One
/// statement could not apply them in order: `ON CONFLICT DO UPDATE` refuses to touch a row twice,
/// and both would read the same snapshot. The later one waits for the next batch, so the outcome
/// is the one sequential statements would give. Nor does a batch take a device token that a
/// batch still being written holds (`busyTokens`): two statements in flight at once could commit
/// its two registrations in either order, and the earlier one would then be the one that stays.
package struct RegistrationQueue<Waiter> {
    package struct Entry {
        var id: UInt64
        var registration: PendingRegistration
        package var waiter: Waiter
    }

    package private(set) var entries: [Entry] = []
    private var nextID: UInt64 = 0

    package init() {}

    package var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }

    /// An id for a registration about to be queued; its waiter withdraws it by this id.
    package mutating func reserveID() -> UInt64 {
        nextID += 1
        return nextID
    }

    /// Queues `registration` under an id from `reserveID()`.
    package mutating func append(_ registration: PendingRegistration, id: UInt64, waiter: Waiter) {
        entries.append(Entry(id: id, registration: registration, waiter: waiter))
    }

    /// Takes the next batch: up to `limit` entries, oldest first, skipping (and keeping queued)
    /// any whose device token or replay key is already in the batch, or whose device token is in
    /// `busyTokens`.
    package mutating func takeBatch(limit: Int, busyTokens: Set<String> = []) -> [Entry] {
        var batch: [Entry] = []
        // The tokens the batch may not take: the busy ones, then its own.
        var tokens = busyTokens
        var replayKeys = Set<ReplayIdentity>()
        var kept: [Entry] = []
        kept.reserveCapacity(entries.count)
        for entry in entries {
            let replay = ReplayIdentity(pubkey: entry.registration.pubkey, key: entry.registration.replayKey)
            let token = entry.registration.deviceToken
            if batch.count < limit, !tokens.contains(token), !replayKeys.contains(replay) {
                tokens.insert(token)
                replayKeys.insert(replay)
                batch.append(entry)
            } else {
                kept.append(entry)
            }
        }
        entries = kept
        return batch
    }

    /// Withdraws a still-queued entry (its request was cancelled); nil when it already left.
    package mutating func remove(id: UInt64) -> Entry? {
        guard let index = entries.firstIndex(where: { $0.id == id }) else { return nil }
        return entries.remove(at: index)
    }

    /// Empties the queue, returning everything that was waiting.
    mutating func removeAll() -> [Entry] {
        defer { entries.removeAll() }
        return entries
    }

    private struct ReplayIdentity: Hashable {
        var pubkey: String
        var key: String
    }
}
