import ArgumentParser
import Foundation
import LinkstrCore
import LinkstrWire
import NostrProtocol

/// `linkstr-load ingest`: the client library's ingest figures (issue #5) on this machine.
///
/// Builds a realistic conversation history (sessions, member snapshots, roots, reactions) as gift
/// wraps addressed to one account, then measures, in one run:
/// - the baseline: `GiftWrap.unwrap` of every wrap on one core (the cryptographic floor);
/// - live ingest: wraps/s from unwrap to state saved in SQLite, in batches as relays deliver them;
/// - restore: the whole history into an empty store in one go (open, order, apply, save).
struct IngestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ingest", abstract: "Client ingest throughput and history restore time.")

    @Option(help: "Wraps in the history.") var events = 10_000
    @Option(help: "Sessions the history spreads over.") var sessions = 20
    @Option(help: "Other members who post and react.") var senders = 8
    @Option(help: "Wraps per live batch.") var batch = 200
    @Option(help: "Directory for the SQLite files (a temporary one when omitted).") var directory: String?

    func run() async throws {
        let me = Keys.generate()
        let others = (0..<max(1, senders)).map { _ in Keys.generate() }
        let started = ContinuousClock.now
        let wraps = try await Self.history(for: me, from: others, sessions: max(1, sessions), count: events)
        print("built \(wraps.count) wraps in \(Self.format(ContinuousClock.now - started))")

        // Baseline: the unwrap alone, one core.
        let cache = ConversationKeyCache()
        var opened = 0
        let baselineStart = ContinuousClock.now
        for wrap in wraps where (try? GiftWrap.unwrap(wrap, keys: me, cache: cache)) != nil { opened += 1 }
        let baseline = ContinuousClock.now - baselineStart
        precondition(opened == wraps.count, "every wrap must open")
        print("baseline  GiftWrap.unwrap, 1 core: \(Self.rate(wraps.count, baseline)) wraps/s (\(Self.format(baseline)))")

        let root = URL(fileURLWithPath: directory ?? NSTemporaryDirectory()).appendingPathComponent("linkstr-ingest-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }

        // Live: batches as they would arrive after EOSE.
        // Live traffic arrives in the order it was sent.
        let (liveTime, liveState) = try await Self.ingest(
            wraps.reversed(), keys: me, path: root.appendingPathComponent("live.sqlite").path,
            batchSize: max(1, batch), origin: .live)
        print(
            "live      unwrap → ledger → SQLite, batches of \(batch): \(Self.rate(wraps.count, liveTime)) wraps/s (\(Self.format(liveTime))); \(liveState)"
        )

        // Restore: everything as one history batch into an empty store.
        let (restoreTime, restoreState) = try await Self.ingest(
            wraps, keys: me, path: root.appendingPathComponent("restore.sqlite").path,
            batchSize: wraps.count, origin: .restore)
        print(
            "restore   \(wraps.count) history events into an empty store: \(Self.format(restoreTime)) (\(Self.rate(wraps.count, restoreTime)) wraps/s); \(restoreState)"
        )
        print("peak RSS  \(Self.peakRSSMegabytes()) MB")
    }

    static func ingest(_ wraps: [NostrEvent], keys: Keys, path: String, batchSize: Int, origin: IngestOrigin) async throws -> (
        Duration, String
    ) {
        let store = try LinkstrStore(path: path)
        let account = store.account(keys.publicKey.hex, cipher: FieldCipher(key: FieldCipher.generateKey(), owner: keys.publicKey.hex))
        var ledger = try account.loadLedger()
        let opener = WrapOpener(keys: keys)
        let start = ContinuousClock.now
        for offset in stride(from: 0, to: wraps.count, by: batchSize) {
            let slice = Array(wraps[offset..<min(offset + batchSize, wraps.count)])
            let messages = await opener.open(slice).compactMap { try? $0.get() }
            _ = ledger.ingest(batch: messages, origin: origin)
            try account.save(ledger.takeChanges(), from: ledger)
        }
        let elapsed = ContinuousClock.now - start
        let reloaded = try account.loadLedger()
        precondition(reloaded.posts.count == ledger.posts.count, "what was saved must load back")
        let summary =
            "\(ledger.sessions.count) sessions, \(ledger.posts.count) posts, \(ledger.reactions.count) reactions, \(ledger.pending.count) pending"
        return (elapsed, summary)
    }

    /// Per session: a create, a snapshot adding everyone, then roots and reactions (one in three)
    /// from the members, oldest first. Wraps are built on every core.
    static func history(for me: Keys, from others: [Keys], sessions: Int, count: Int) async throws -> [NostrEvent] {
        let base = UnixTime.now() - 86_400
        var plan: [(LinkstrPayload, Keys, Int64)] = []
        var roots: [String: [String]] = [:]
        let creator = others[0]
        for session in 0..<sessions {
            let id = String(format: "%032X", session + 1)
            let members = ([me] + others).map(\.publicKey.hex)
            plan.append(
                (
                    LinkstrPayload(
                        conversationID: id, rootID: UUID().uuidString, kind: .sessionCreate, timestamp: base,
                        sessionName: "Session \(session)", memberPubkeys: members), creator, base + Int64(session)
                ))
        }
        var index = 0
        while plan.count < count {
            let session = index % sessions
            let id = String(format: "%032X", session + 1)
            let sender = others[index % others.count]
            let time = base + 100 + Int64(index)
            if index % 3 == 2, let target = roots[id]?.last {
                plan.append(
                    (
                        LinkstrPayload(
                            conversationID: id, rootID: target, kind: .reaction, timestamp: time, emoji: "👍", reactionActive: true),
                        sender, time
                    ))
            } else {
                let payload = LinkstrPayload(
                    conversationID: id, kind: .root, url: "https://example.com/clip/\(index)", note: "clip \(index)", timestamp: time)
                let rumor = LinkstrRumor.make(payload, sender: sender.publicKey, createdAt: time)
                roots[id, default: []].append(rumor.id.hex)
                plan.append((payload, sender, time))
            }
            index += 1
        }
        let recipient = me.publicKey
        let cores = max(ProcessInfo.processInfo.activeProcessorCount, 1)
        let chunk = (plan.count + cores - 1) / cores
        return try await withThrowingTaskGroup(of: (Int, [NostrEvent]).self) { group in
            for start in stride(from: 0, to: plan.count, by: chunk) {
                let part = plan[start..<min(start + chunk, plan.count)]
                group.addTask {
                    (
                        start,
                        try part.map { payload, sender, time in
                            try GiftWrap.make(
                                LinkstrRumor.make(payload, sender: sender.publicKey, createdAt: time), author: sender, recipient: recipient)
                        }
                    )
                }
            }
            var parts: [(Int, [NostrEvent])] = []
            for try await part in group { parts.append(part) }
            // Relays page history newest first: deliver it that way.
            return parts.sorted { $0.0 < $1.0 }.flatMap(\.1).reversed()
        }
    }

    static func rate(_ count: Int, _ duration: Duration) -> Int { Int(Double(count) / max(duration.inSeconds, 1e-9)) }
    static func format(_ duration: Duration) -> String { String(format: "%.2f s", duration.inSeconds) }

    static func peakRSSMegabytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return -1 }
        return kilobytes / 1024
    }
}
