import Foundation
import NostrProtocol
import PostgresNIO
import PushGateway
import Testing

/// How the relay watcher reads its watched set from a real PostgreSQL: a page at a time, so that
/// 100,000 watched pubkeys never sit in memory twice, and still exactly once each.
struct WatchedSetReadTests {
    static let settings = WatchSettings(relays: [], chunkSize: 3, coalesceSeconds: 0, shards: 4, leaseSeconds: 30)

    /// Registers a watching device for `pubkey`, naming `relays`, `age` seconds old.
    static func addDevice(
        _ database: PostgresClient, _ token: String, _ pubkey: String, relays: [String] = [], age: Int = 0, watch: Bool = true
    ) async throws {
        try await database.query(
            """
            INSERT INTO devices (device_token, pubkey, apns_environment, topic, relay_watch, relays, registered_at)
            VALUES (\(token), \(pubkey), 'sandbox', 'app.linkstr', \(watch), \(relays), now() - make_interval(secs => \(Double(age))))
            """, logger: TestDatabase.logger)
    }

    /// Every page from the first, as the watcher reads them; fails past `maxPages`.
    static func readAll(
        _ store: WatchStore, shards: Set<Int>, maxPages: Int = 50
    ) async throws -> (users: [String: RelayWatchPlan.UserRelays], pageSizes: [Int]) {
        var users: [String: RelayWatchPlan.UserRelays] = [:]
        var sizes: [Int] = []
        var cursor: String?
        repeat {
            let page = try await store.watchedUsers(inShards: shards, after: cursor)
            for (pubkey, relays) in page.users {
                #expect(users[pubkey] == nil, "a pubkey on two pages")
                users[pubkey] = relays
            }
            sizes.append(page.users.count)
            cursor = page.next
        } while cursor != nil && sizes.count < maxPages
        #expect(cursor == nil, "the pages end")
        return (users, sizes)
    }

    @Test func pagesHoldEveryWatchedUserOnceWithAllTheirRelays() async throws {
        try await TestDatabase.with { _, database in
            let pubkeys = (0..<11).map { _ in Keys.generate().publicKey.hex }
            for (index, pubkey) in pubkeys.enumerated() {
                try await Self.addDevice(database, "old\(index)", pubkey, relays: ["wss://r\(index).example"], age: 3_600)
                // Every third user has a second, newer device: a page must not split the two.
                if index % 3 == 0 { try await Self.addDevice(database, "new\(index)", pubkey, relays: ["wss://second.example"]) }
            }
            try await Self.addDevice(database, "typed", Keys.generate().publicKey.hex, watch: false)
            try await database.query(
                """
                INSERT INTO inbox_relay_lists (pubkey, event_id, created_at, relays)
                VALUES (\(pubkeys[1]), \(String(repeating: "e", count: 64)), 1, \(["wss://inbox.example"]))
                """, logger: TestDatabase.logger)
            var store = WatchStore(client: database, settings: Self.settings, logger: TestDatabase.logger)
            store.watchedUsersPageSize = 2

            let (users, sizes) = try await Self.readAll(store, shards: Set(0..<4))
            #expect(Set(users.keys) == Set(pubkeys), "every watched user, and not the one with typed pushes only")
            #expect(sizes == [2, 2, 2, 2, 2, 1])
            let relays = { (pubkey: String) in users[pubkey]?.registration.map(\.description) }
            #expect(relays(pubkeys[0]) == ["wss://r0.example", "wss://second.example"], "both devices, the older first")
            #expect(relays(pubkeys[2]) == ["wss://r2.example"])
            #expect(users[pubkeys[1]]?.inboxList?.map(\.description) == ["wss://inbox.example"])
            #expect(users[pubkeys[2]]?.inboxList == nil)

            // A page size that divides the count: the last full page is followed by an empty one.
            store.watchedUsersPageSize = 11
            #expect(try await Self.readAll(store, shards: Set(0..<4)).pageSizes == [11, 0])

            // Only the shards asked for.
            store.watchedUsersPageSize = 3
            let half = try await Self.readAll(store, shards: [0, 1]).users
            #expect(Set(half.keys) == Set(pubkeys.filter { WatchShard.of(pubkey: $0, shards: 4) < 2 }))
            #expect(try await Self.readAll(store, shards: []).users.isEmpty)
        }
    }

    /// A change no notification announced (a lost LISTEN connection, an edit made with the
    /// triggers off) is caught by the periodic re-read, page by page: pubkeys no longer watched
    /// go and new ones come.
    @Test func theResyncCatchesChangesNoNotificationAnnounced() async throws {
        try await TestDatabase.with { _, database in
            let pubkeys = (0..<10).map { _ in Keys.generate().publicKey.hex }
            for (index, pubkey) in pubkeys.enumerated() { try await Self.addDevice(database, "t\(index)", pubkey) }
            var store = WatchStore(client: database, settings: Self.settings, logger: TestDatabase.logger)
            store.watchedUsersPageSize = 4
            let watcher = RelayWatcher(
                store: store, metrics: GatewayMetrics(), logger: TestDatabase.logger, heartbeatInterval: .milliseconds(100),
                resyncInterval: .milliseconds(300))
            let running = Task { try await watcher.run() }
            let watchedAll = try await GatewayHarness.eventually { await watcher.status().watchedPubkeys == 10 }
            #expect(watchedAll)

            try await database.query("ALTER TABLE devices DISABLE TRIGGER USER", logger: TestDatabase.logger)
            try await database.query("DELETE FROM devices WHERE device_token IN ('t0', 't4', 't9')", logger: TestDatabase.logger)
            for index in 0..<2 { try await Self.addDevice(database, "n\(index)", Keys.generate().publicKey.hex) }
            try await database.query("ALTER TABLE devices ENABLE TRIGGER USER", logger: TestDatabase.logger)
            // 10 − 3 + 2, seen by the re-read alone, and kept by the re-reads after it. A re-read
            // whose pages straddled the edit sees part of it and passes through other counts
            // (its pages are separate reads; the next re-read corrects it), so the count must
            // hold over two more re-reads, not merely be reached.
            let settled = try await GatewayHarness.eventually(within: 30) {
                guard await watcher.status().watchedPubkeys == 9 else { return false }
                try await Task.sleep(for: .milliseconds(700))
                return await watcher.status().watchedPubkeys == 9
            }
            #expect(settled, "10 − 3 + 2, and it stays so")
            running.cancel()
            _ = await running.result
        }
    }
}
