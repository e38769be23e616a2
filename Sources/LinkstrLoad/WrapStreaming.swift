import Foundation
import LoadSupport
import NostrProtocol

/// What the wrap benchmarks (`watch`, `inbox`) share: gift wraps made and signed before the clock
/// starts, the baseline of one core verifying them, streaming at a rate in 10 ms ticks, and reading
/// from the APNs sandbox when each wrap's push arrived.
enum WrapStreaming {
    /// A signed gift wrap (kind 1059, ~1 KB, from a fresh key, `created_at` up to a day back as
    /// NIP-59 randomises it) to `recipient`.
    static func wrap(to recipient: String) -> NostrEvent {
        let author = Keys.generate()
        return UnsignedEvent(
            pubkey: author.publicKey, createdAt: UnixTime.now() - Int64.random(in: 0..<86_400), kind: 1059,
            tags: [["p", recipient]], content: Base64.encode(SecureRandom.bytes(600))
        ).signed(by: author)
    }

    /// Prints how fast one core verifies (up to 10,000 of) `events`: the per-wrap CPU floor of
    /// anything that accepts them.
    static func printVerificationBaseline(_ events: [NostrEvent]) {
        let sample = events.prefix(10_000)
        let start = ContinuousClock.now
        var valid = 0
        for event in sample where event.isValid { valid += 1 }
        let elapsed = (ContinuousClock.now - start).inSeconds
        print(String(format: "baseline: one core verifies %.0f wraps/s (%d checked)", Double(sample.count) / elapsed, valid))
    }

    /// Calls `send` with each 10 ms tick's due indices of `count` at `rate` a second, and returns
    /// when each index was handed over (ms since 1970).
    static func stream(count: Int, rate: Int, send: (Range<Int>) -> Void) async throws -> [Double] {
        var sentAt = [Double](repeating: 0, count: count)
        printNow("streaming \(count) wraps at \(rate)/s")
        let start = ContinuousClock.now
        let tick = Duration.milliseconds(10)
        var sent = 0
        var nextTick = start
        while sent < count {
            let due = min(count, Int((ContinuousClock.now - start).inSeconds * Double(rate)) + 1)
            let now = Date().timeIntervalSince1970 * 1000
            for index in sent..<due { sentAt[index] = now }
            send(sent..<due)
            sent = due
            nextTick = nextTick + tick
            try await Task.sleep(until: nextTick, clock: .continuous)
        }
        let elapsed = (ContinuousClock.now - start).inSeconds
        print(String(format: "streamed %d wraps in %.2f s (%.0f/s)", count, elapsed, Double(count) / elapsed))
        return sentAt
    }

    /// Waits until the sandbox has answered `total` more requests than `before`, or `expiry`.
    static func waitForDeliveries(_ total: Int, after before: Int, from client: SandboxClient, until expiry: ContinuousClock.Instant)
        async throws
    {
        var answered = before
        while answered - before < total, ContinuousClock.now < expiry {
            try await Task.sleep(for: .milliseconds(100))
            answered = try await client.answered()
        }
    }

    /// Prints the latency timeline (by the second a wrap was sent in, where in the run the slow
    /// ones were) and the summary, `what` naming the span (`relay-to-APNs`); returns how many
    /// streamed wraps reached the sandbox.
    static func reportLatencies(_ records: [JSONValue], sentAt: [String: Double], total: Int, what: String) -> Int {
        var latencies: [Double] = []
        var lastReceived = 0.0
        let first = sentAt.values.min() ?? 0
        var bySecond: [Int: [Double]] = [:]
        for record in records {
            guard let wrapID = record["payload"]?["wrap_id"]?.stringValue, let sent = sentAt[wrapID],
                case .integer(let received)? = record["received_at_ms"]
            else { continue }
            latencies.append(Double(received) - sent)
            bySecond[Int((sent - first) / 1000), default: []].append(Double(received) - sent)
            lastReceived = max(lastReceived, Double(received))
        }
        let timeline = bySecond.keys.sorted().map { second -> String in
            let values = bySecond[second]!.sorted()
            return "\(second):\(Int(percentile(values, 0.5)))/\(Int(percentile(values, 0.99)))/\(Int(values.last!))"
        }
        print("latency ms by second sent (p50/p99/max): " + timeline.joined(separator: " "))
        print("pushes for the streamed wraps delivered to the sandbox: \(latencies.count) of \(total)")
        if !latencies.isEmpty {
            latencies.sort()
            let sustained = Double(latencies.count) / ((lastReceived - first) / 1000)
            printNow("sustained: \(Int(sustained.rounded())) wraps/s \(what) (first send to last delivery)")
            print(latencySummary(what + " latency ms", sorted: latencies))
        }
        return latencies.count
    }

    /// "LABEL: p50 … p95 … p99 … max …" of ascending `sorted` values.
    static func latencySummary(_ label: String, sorted: [Double]) -> String {
        label
            + String(
                format: ": p50 %.1f  p95 %.1f  p99 %.1f  max %.1f", percentile(sorted, 0.5), percentile(sorted, 0.95),
                percentile(sorted, 0.99),
                sorted.last ?? 0)
    }

    /// The value at fraction `p` of ascending `sorted` (0 when empty).
    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }
}
