import PostgresNIO
import PushGateway
import Testing

/// What an idle delivery loop asks before a claim round: yes whenever a claim could take
/// something (a job or a batch due), no while everything queued waits for its time, is in
/// flight under a lease or has expired.
struct AnythingDueTests {
    static let (token, pubkey) = (GatewayHarness.token(8), String(repeating: "cd", count: 32))

    /// `count` gift-wrap jobs, unleased, due in `seconds` (negative: overdue).
    static func queueJob(_ client: PostgresClient, dueIn seconds: Int, count: Int = 1) async throws {
        try await client.query(
            """
            INSERT INTO push_jobs (apns_id, device_token, pubkey, notification_type, event_id, conversation_id, relay, next_attempt_at,
                                   expires_at, attempts)
            SELECT gen_random_uuid(), \(token), \(pubkey), 'gift_wrap', md5(random()::text), '', 'ws://relay',
                   now() + make_interval(secs => \(Double(seconds))), now() + interval '1 day', 0
            FROM generate_series(1, \(count))
            """, logger: TestDatabase.logger)
    }

    /// `count` typed-push batches of one device, each with `attempts`, due in `seconds`.
    static func queueBatch(_ client: PostgresClient, dueIn seconds: Int, attempts: Int, count: Int = 1) async throws {
        try await client.query(
            """
            INSERT INTO push_batches (notification_type, event_id, conversation_id, device_tokens, pubkeys, apns_ids, size, attempts,
                                      next_attempt_at, expires_at)
            SELECT 'new_post', md5(random()::text), 'c1', ARRAY[\(token)], ARRAY[\(pubkey)], ARRAY[gen_random_uuid()], 1, \(attempts),
                   now() + make_interval(secs => \(Double(seconds))), now() + interval '1 day'
            FROM generate_series(1, \(count))
            """, logger: TestDatabase.logger)
    }

    @Test func itSaysYesExactlyWhenAJobOrABatchIsDue() async throws {
        try await TestDatabase.with { _, client in
            let queue = DeliveryQueue(client: client, logger: TestDatabase.logger)
            #expect(try await queue.anythingDue() == false, "an empty queue")

            // A job waiting for its coalescing window, a batch in flight under its lease.
            try await Self.queueJob(client, dueIn: 30)
            try await Self.queueBatch(client, dueIn: 30, attempts: 1)
            #expect(try await queue.anythingDue() == false, "nothing due yet")
            #expect(try await queue.claim(limit: 10).isEmpty, "and a claim agrees")

            // Due, but leased to a worker (a job's lease is `locked_until`), or expired.
            try await Self.queueJob(client, dueIn: -1)
            #expect(try await queue.anythingDue(), "a job due")
            try await client.query(
                "UPDATE push_jobs SET locked_until = now() + interval '30 seconds' WHERE next_attempt_at <= now()",
                logger: TestDatabase.logger)
            #expect(try await queue.anythingDue() == false, "a job in flight")
            try await client.query(
                "UPDATE push_jobs SET locked_until = NULL, expires_at = now() - interval '1 second' WHERE next_attempt_at <= now()",
                logger: TestDatabase.logger)
            #expect(try await queue.anythingDue() == false, "an expired job")
            try await client.query(
                "UPDATE push_jobs SET locked_until = now() - interval '1 second', expires_at = now() + interval '1 day' WHERE next_attempt_at <= now()",
                logger: TestDatabase.logger)
            #expect(try await queue.anythingDue(), "a job whose lease ran out")
            // Its device is not registered: the claim drops the job, and the question then agrees.
            #expect(try await queue.claim(limit: 10).isEmpty)
            #expect(try await queue.anythingDue() == false, "the claim deleted the job it could not send")

            try await Self.queueBatch(client, dueIn: -1, attempts: 0)
            #expect(try await queue.anythingDue(), "a batch due")
            try await client.query(
                "UPDATE push_batches SET expires_at = now() - interval '1 second' WHERE next_attempt_at <= now()",
                logger: TestDatabase.logger)
            #expect(try await queue.anythingDue() == false, "an expired batch")
        }
    }
}
