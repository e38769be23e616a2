import Foundation
import PostgresNIO
import PushGateway
import Testing

/// Shard leases in a real PostgreSQL (`WatchStore.heartbeat`): what an instance that takes a
/// shard learns of when its previous owner stopped watching it.
struct ShardLeaseTests {
    static let settings = WatchSettings(relays: [], chunkSize: 500, coalesceSeconds: 0, shards: 8, leaseSeconds: 30)

    static func databaseNow(_ database: PostgresClient) async throws -> Int64 {
        Int64(try await TestDatabase.count(database, "SELECT floor(extract(epoch FROM now()))::int"))
    }

    @Test func aTakerLearnsWhenThePreviousOwnerStopped() async throws {
        try await TestDatabase.with { _, database in
            let store = WatchStore(client: database, settings: Self.settings, logger: TestDatabase.logger)
            try await store.prepareShards()
            let first = try await store.heartbeat(instance: "a")
            #expect(first.held == Set(0..<8))
            #expect(first.watchedUntil.isEmpty, "nobody held them before")
            #expect(try await store.heartbeat(instance: "a") == WatchStore.ShardLeases(held: Set(0..<8)), "a renewal takes nothing")

            // A graceful stop gives the shards back with the moment it did.
            try await store.release(instance: "a")
            let released = try await Self.databaseNow(database)
            let second = try await store.heartbeat(instance: "b")
            #expect(second.held == Set(0..<8))
            #expect(Set(second.watchedUntil.keys) == Set(0..<8))
            #expect(second.watchedUntil.values.allSatisfy { abs($0 - released) <= 2 }, "\(second.watchedUntil) against \(released)")

            // b caught up everywhere, then dies: its leases lapse. Its last renewal is when it was
            // last known to watch.
            #expect(try await store.heartbeat(instance: "b", caughtUp: Set(0..<8)) == WatchStore.ShardLeases(held: Set(0..<8)))
            try await database.query(
                "UPDATE watch_shards SET expires_at = now() - interval '5 seconds' WHERE owner = 'b'", logger: TestDatabase.logger)
            let lapsed = try await Self.databaseNow(database)
            let third = try await store.heartbeat(instance: "c")
            // b's heartbeat row is still fresh: c takes its fair half.
            #expect(third.held.count == 4)
            #expect(Set(third.watchedUntil.keys) == third.held)
            #expect(
                third.watchedUntil.values.allSatisfy { abs($0 - (lapsed - 35)) <= 2 }, "\(third.watchedUntil) against \(lapsed - 35)")
        }
    }

    /// A graceful stop is dated by its last renewal, not by when the release ran: the watcher
    /// stopped reading before its queues drained and the release came.
    @Test func aReleaseIsDatedByTheLastRenewal() async throws {
        try await TestDatabase.with { _, database in
            let store = WatchStore(client: database, settings: Self.settings, logger: TestDatabase.logger)
            try await store.prepareShards()
            _ = try await store.heartbeat(instance: "a")
            // As if a had last renewed 20 s ago (a 30 s lease).
            try await database.query(
                "UPDATE watch_shards SET expires_at = now() + interval '10 seconds' WHERE owner = 'a'", logger: TestDatabase.logger)
            let renewed = try await Self.databaseNow(database) - 20
            try await store.release(instance: "a")
            let taken = try await store.heartbeat(instance: "b")
            #expect(Set(taken.watchedUntil.keys) == Set(0..<8))
            #expect(taken.watchedUntil.values.allSatisfy { abs($0 - renewed) <= 2 }, "\(taken.watchedUntil) against \(renewed)")
        }
    }

    /// A shard given back above an instance's fair share is dated too: the instance that takes
    /// it reaches back from there.
    @Test func aShardGivenBackToANewcomerIsDated() async throws {
        try await TestDatabase.with { _, database in
            let store = WatchStore(client: database, settings: Self.settings, logger: TestDatabase.logger)
            try await store.prepareShards()
            #expect(try await store.heartbeat(instance: "a").held.count == 8)
            // b is alive: a's next heartbeat gives half back.
            #expect(try await store.heartbeat(instance: "b").held.isEmpty, "nothing free yet")
            #expect(try await store.heartbeat(instance: "a").held.count == 4)
            let givenBack = try await Self.databaseNow(database)
            let taken = try await store.heartbeat(instance: "b")
            #expect(taken.held.count == 4)
            #expect(Set(taken.watchedUntil.keys) == taken.held)
            #expect(taken.watchedUntil.values.allSatisfy { abs($0 - givenBack) <= 2 })
            #expect(
                try await TestDatabase.count(database, "SELECT count(DISTINCT owner)::int FROM watch_shards WHERE expires_at > now()") == 2)
        }
    }

    /// An owner that took a shard and stopped before catching up passes on its predecessor's
    /// moment, not its own: the next taker reaches back over both gaps. One that caught up
    /// (its heartbeat said so) passes on its own stop.
    @Test func aTakerThatDidNotCatchUpPassesTheEarlierMomentOn() async throws {
        try await TestDatabase.with { _, database in
            let store = WatchStore(client: database, settings: Self.settings, logger: TestDatabase.logger)
            try await store.prepareShards()
            _ = try await store.heartbeat(instance: "a")
            try await store.release(instance: "a")
            // As if a had stopped ten minutes ago.
            try await database.query(
                "UPDATE watch_shards SET expires_at = expires_at - interval '10 minutes'", logger: TestDatabase.logger)
            let first = Int64(
                try await TestDatabase.count(database, "SELECT floor(extract(epoch FROM min(expires_at)))::int FROM watch_shards"))
            let byB = try await store.heartbeat(instance: "b")
            #expect(Set(byB.watchedUntil.keys) == Set(0..<8))
            #expect(byB.watchedUntil.values.allSatisfy { abs($0 - first) <= 1 })
            // A renewal that names nothing caught up clears nothing, and says what is held back.
            #expect(try await store.heartbeat(instance: "b").watchedUntil == byB.watchedUntil)
            // b caught up on the even shards only, then died.
            _ = try await store.heartbeat(instance: "b", caughtUp: [0, 2, 4, 6])
            #expect(
                try await TestDatabase.count(database, "SELECT count(*)::int FROM watch_shards WHERE resume_from IS NOT NULL") == 4,
                "cleared where caught up")
            try await database.query(
                "UPDATE watch_shards SET expires_at = now() - interval '5 seconds' WHERE owner = 'b'", logger: TestDatabase.logger)
            let lapsed = try await Self.databaseNow(database)
            let byC = try await store.heartbeat(instance: "c")
            #expect(byC.held == [0, 1, 2, 3], "c's half, lowest first")
            for shard in [1, 3] { #expect(byC.watchedUntil[shard].map { abs($0 - first) <= 1 } == true, "inherited: \(byC.watchedUntil)") }
            for shard in [0, 2] {
                #expect(byC.watchedUntil[shard].map { abs($0 - (lapsed - 35)) <= 2 } == true, "b's own stop: \(byC.watchedUntil)")
            }
        }
    }
}
