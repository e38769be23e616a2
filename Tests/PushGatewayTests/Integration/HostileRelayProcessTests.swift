import APNsSandbox
import Foundation
import NostrProtocol
import NostrRelay
import PushGateway
import Synchronization
import TestSupport
import Testing

/// A real `linkstr-push` process whose only relay is a `HostileRelay` in this process: a flood
/// leaves its memory bounded and its health check fast, a relay past its limits is disconnected
/// and kept away for longer each time, wraps published while it was not reading are pushed once
/// it reads again, and relay text reaches its log escaped and throttled.
@Suite(.serialized) struct HostileRelayProcessTests {
    static let token = "ab" + String(repeating: "0d", count: 31)

    /// A kind-1059 event to `recipient` with one `p` tag, signed by a fresh key and dated
    /// `createdAt`: all the watcher checks (it never decrypts), without the cost of a real wrap.
    static func wrapLike(to recipient: Keys, createdAt: Int64 = UnixTime.now(), _ content: String = "x") -> NostrEvent {
        let author = Keys.generate()
        return UnsignedEvent(
            pubkey: author.publicKey, createdAt: createdAt, kind: EventKind.giftWrap, tags: [["p", recipient.publicKey.hex]],
            content: content
        ).signed(by: author)
    }

    /// `count` distinct signed events to `recipient` as JSON, made on every core. More than the
    /// watcher's cache of verified ids (65,536), so cycling through them costs a signature check
    /// each time, as a flood of new wraps would.
    static func distinctWraps(to recipient: Keys, count: Int) async -> [String] {
        let parts = max(ProcessInfo.processInfo.activeProcessorCount, 1)
        return await withTaskGroup(of: [String].self) { group in
            for part in 0..<parts {
                group.addTask {
                    let author = Keys.generate()
                    let now = UnixTime.now()
                    return (0..<(count / parts + 1)).map { index in
                        UnsignedEvent(
                            pubkey: author.publicKey, createdAt: now - Int64(index % 3600), kind: EventKind.giftWrap,
                            tags: [["p", recipient.publicKey.hex]], content: "flood \(part).\(index)"
                        ).signed(by: author).json
                    }
                }
            }
            var all: [String] = []
            for await part in group { all += part }
            return all
        }
    }

    static func start(
        _ url: DatabaseURL, _ sandbox: SandboxFixture, _ relay: HostileRelay, _ extra: [String: String] = [:],
        watching keys: Keys
    ) async throws -> GatewayProcess {
        let gateway = try await GatewayProcess.start(
            database: url, sandbox: sandbox,
            environment: [
                "RELAYS": relay.url, "WATCH_COALESCE_SECONDS": "0",
            ].merging(extra) { $1 })
        let body = GatewayHarness.registerBody(token, extra: #","relay_watch":true"#)
        #expect(try await gateway.send(keys, "POST", "/v1/devices/register", json: body) == 202)
        return gateway
    }

    /// The relay's entry in `/readyz`'s watch status (the database must be up).
    static func relayStatus(_ gateway: GatewayProcess) async throws -> JSONValue? {
        let ready = try JSONValue(parsing: Array(try await gateway.get("/readyz").body.utf8))
        guard case .array(let relays)? = ready["watch"]?["relays"] else { return nil }
        return relays.first
    }

    /// Resident memory of `pid` in MB (VmRSS).
    static func residentMB(_ pid: pid_t) -> Double {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (line.split(separator: " ").dropFirst().first.flatMap { Double($0) } ?? 0) / 1024
    }

    static func pushedWrapIDs(_ sandbox: SandboxFixture) -> Set<String> {
        Set(RelayWatchTests.giftWrapDeliveries(sandbox).compactMap { try? JSONValue(parsing: $0.payload)["wrap_id"]?.stringValue })
    }

    /// The value of metric `name` with exactly `labels` (in whatever order they are written), 0 when absent.
    static func metric(_ gateway: GatewayProcess, _ name: String, _ labels: [String: String]) async throws -> Double {
        let wanted = Set(labels.map { #"\#($0.key)="\#($0.value)""# })
        for line in try await gateway.get("/metrics").body.split(separator: "\n") {
            if labels.isEmpty, line.hasPrefix(name + " ") { return line.split(separator: " ").last.flatMap { Double($0) } ?? 0 }
            guard line.hasPrefix(name + "{") else { continue }
            guard let close = line.firstIndex(of: "}") else { continue }
            let found = Set(line[line.index(line.startIndex, offsetBy: name.count + 1)..<close].split(separator: ",").map(String.init))
            if found == wanted { return line.split(separator: " ").last.flatMap { Double($0) } ?? 0 }
        }
        return 0
    }

    /// The watcher's metrics and the end of the gateway's log, for a failure message.
    static func diagnostics(_ gateway: GatewayProcess) async -> String {
        let metrics = (try? await gateway.get("/metrics").body) ?? "(no metrics)"
        let log = (try? String(contentsOfFile: gateway.logPath, encoding: .utf8)) ?? ""
        return "metrics:\n"
            + metrics.split(separator: "\n").filter { $0.hasPrefix("linkstr_watch") && !$0.contains("bucket") }.joined(separator: "\n")
            + "\nlog:\n" + log.split(separator: "\n").suffix(40).joined(separator: "\n")
    }

    // MARK: Bounded inbound path

    /// p99 of `count` sequential `/healthz` probes, paced 200 ms apart; also checks each is 200.
    static func healthProbes(_ gateway: GatewayProcess, count: Int, while sample: () -> Void = {}) async throws -> (
        p99: Duration, all: [Duration]
    ) {
        var probes: [Duration] = []
        for _ in 0..<count {
            sample()
            let probe = ContinuousClock.now
            #expect(try await gateway.get("/healthz").status == 200)
            probes.append(ContinuousClock.now - probe)
            // Pacing, not a measurement.
            try await Task.sleep(for: .milliseconds(200))
        }
        let sorted = probes.sorted()
        return (sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)], probes)
    }

    /// Whether the gateway is not reading `relay` now because what it read cannot leave: reading
    /// paused and the sightings waiting for PostgreSQL at their bound (scrape-time gauges; they
    /// work while PostgreSQL is down, unlike `/readyz`). Reading also pauses for a moment when
    /// verification falls behind, which is not what these tests wait for.
    static func stuckBehindTheDatabase(_ gateway: GatewayProcess, _ relay: HostileRelay) async -> Bool {
        guard (try? await metric(gateway, "linkstr_watch_relay_reading_paused", ["relay": relay.url])) == 1 else { return false }
        return (try? await metric(gateway, "linkstr_watch_pending_wraps", [:])).map { $0 >= Double(WatchSettings.sightingBufferLimit) }
            ?? false
    }

    /// The worst flood for memory: PostgreSQL is down, so nothing the gateway reads can leave it,
    /// and the relay sends new wraps to a watched pubkey as fast as the socket takes them, reading
    /// nothing the gateway sends. The gateway fills its bounded buffers and stops reading; for the
    /// twelve seconds that follow its memory stays flat and `/healthz` stays about as fast as it
    /// is on this machine without a flood. Once PostgreSQL is back, it reads again and delivers.
    @Test(.timeLimit(.minutes(5))) func aFloodTheGatewayCannotDrainLeavesMemoryBoundedAndHealthChecksFast() async throws {
        let cluster = try PostgresCluster()
        try await cluster.start()
        let url = try DatabaseURL(parsing: cluster.url)
        let bob = Keys.generate()
        let flood = await Self.distinctWraps(to: bob, count: 20_000)
        let relay = try HostileRelay()
        try await relay.start()
        try await SandboxFixture.with { sandbox in
            // No rate limit here: this is about what the gateway holds, not about hanging up.
            let gateway = try await Self.start(url, sandbox, relay, ["WATCH_RELAY_MAX_EVENTS_PER_SECOND": "0"], watching: bob)
            defer { gateway.kill() }
            #expect(try await GatewayHarness.eventually(within: 15) { try await Self.relayStatus(gateway)?["live_pubkeys"] == 1 })
            // This machine's own pace without a flood (other builds share its two cores).
            let idle = try await Self.healthProbes(gateway, count: 15)

            try await cluster.stop()
            relay.flood(.init(items: flood.map { .event($0) }), stopReading: true)
            #expect(
                await eventually(within: 60) { await Self.stuckBehindTheDatabase(gateway, relay) },
                "the gateway stopped reading the relay: \(relay.records)")
            let paused = ContinuousClock.now
            var samples: [(at: Double, mb: Double)] = []
            let busy = try await Self.healthProbes(gateway, count: 50) {
                samples.append(((ContinuousClock.now - paused).inSeconds, Self.residentMB(gateway.process.pid)))
            }
            let pending = try await Self.metric(gateway, "linkstr_watch_pending_wraps", [:])
            let stillPaused = await Self.stuckBehindTheDatabase(gateway, relay)
            let sent = relay.subscribers.first?.flooded ?? 0
            let first = samples.first?.mb ?? 0, peak = samples.map(\.mb).max() ?? 0
            let summary = """
                RSS MB \(samples.map { String(format: "%.0f@%.1fs", $0.mb, $0.at) }), healthz p99 \(busy.p99) (idle \(idle.p99)), \
                \(pending) wraps pending, relay sent \(sent)
                """
            #expect(stillPaused, "still not reading: nothing can drain: \(summary)")
            // One lane (`RELAYS`) of the watcher's one batcher holds what waits.
            #expect(pending <= Double(WatchSettings.sightingBufferLimit), "what waits for PostgreSQL is bounded: \(summary)")
            #expect(peak < 300, "resident memory stays bounded: \(summary)")
            #expect(peak - first < 20, "and flat while the relay keeps pushing: \(summary)")
            // Relative to this machine's own pace, since the cores are shared with the rest of the
            // suite: no slower than 1.5 s (three quarters of the 2 s timeout of the deployment's
            // probes) or four times the p99 without a flood, whichever is more. A loop starved by
            // the flood would take seconds; full runs have seen 3.2 times the idle p99, 645 ms,
            // and, on a machine so loaded that the idle p99 was 215 ms, one probe of 50 at 1.01 s.
            #expect(busy.p99 <= max(.milliseconds(1_500), idle.p99 * 4), "health checks stay fast: \(summary)")

            try await cluster.start()
            // Asked of the gateway, not the relay: left unread past two ping intervals (60 s), the
            // connection closes on its unanswered pings, and the next one has no flood.
            #expect(
                await eventually(within: 120) {
                    let paused = (try? await Self.metric(gateway, "linkstr_watch_relay_reading_paused", ["relay": relay.url])) ?? 1
                    let waiting = (try? await Self.metric(gateway, "linkstr_watch_pending_wraps", [:])) ?? .infinity
                    return paused == 0 && waiting < Double(WatchSettings.sightingBufferLimit)
                }, "reading again once PostgreSQL is back: \(relay.records)")
            #expect(await eventually(within: 60) { !RelayWatchTests.giftWrapDeliveries(sandbox).isEmpty }, "and delivering")
            #expect(await gateway.stop(within: 30), "and it still shuts down gracefully")
        }
        await relay.stop()
        await cluster.destroy()
    }

    enum GapCase: String, CaseIterable, Sendable {
        /// The relay gives up on the gateway once it stops reading, dropping what it had queued.
        case relayHangsUp
        /// The relay keeps the connection but drops the events it cannot send at once.
        case relayDropsEvents
    }

    /// PostgreSQL stops while a relay streams wraps: the watcher fills its bounded buffers and
    /// stops reading the relay. A wrap published meanwhile, dated back to the edge of the two-day
    /// window, is lost to the relay's handling of a slow reader, and by the time the gateway reads
    /// again `now − 2 days` has moved past it: only a `since` from before the pause brings it back.
    @Test(.timeLimit(.minutes(5)), arguments: GapCase.allCases)
    func aWrapPublishedWhileReadingWasPausedIsStillPushed(_ gapCase: GapCase) async throws {
        let cluster = try PostgresCluster()
        try await cluster.start()
        let url = try DatabaseURL(parsing: cluster.url)
        let relay = try HostileRelay()
        try await relay.start()
        let bob = Keys.generate()
        try await SandboxFixture.with { sandbox in
            let gateway = try await Self.start(
                url, sandbox, relay, ["WATCH_RELAY_MAX_EVENTS_PER_SECOND": "0", "LOG_LEVEL": "info"], watching: bob)
            defer { gateway.kill() }
            #expect(try await GatewayHarness.eventually(within: 15) { try await Self.relayStatus(gateway)?["live_pubkeys"] == 1 })

            try await cluster.stop()
            let flooding = try RelayWatchTests.wrap(to: bob, "the flood")
            let slowReader: HostileRelay.SlowReader = gapCase == .relayHangsUp ? .disconnect(after: .seconds(1)) : .dropEvents
            relay.flood(.init(items: [.event(flooding.json)], total: 200_000), slowReader: slowReader)
            // The gateway's own pause, its buffers full, not just a relay socket that is slow to drain.
            #expect(
                await eventually(within: 60) { await Self.stuckBehindTheDatabase(gateway, relay) },
                "the gateway stopped reading: \(relay.records)")
            switch gapCase {
            case .relayHangsUp:
                #expect(
                    await eventually(within: 60) { relay.subscribers.first?.closedAsSlow == true }, "the relay gave up: \(relay.records)")
            case .relayDropsEvents:
                #expect(
                    await eventually(within: 60) { relay.subscribers.first?.stalled == true },
                    "the relay's socket is full: \(relay.records)")
                relay.stopFlooding()
            }
            let gap = Self.wrapLike(to: bob, createdAt: UnixTime.now() - 172_800 + 3, "in the gap")
            relay.publish(gap)
            if gapCase == .relayDropsEvents {
                #expect(await eventually { relay.subscribers.first?.dropped == 1 }, "the relay dropped it for the slow reader")
            }
            // PostgreSQL stays down past the watcher's long-pause threshold (5 s) and past the gap
            // wrap's edge of the window (3 s).
            try await Task.sleep(for: .seconds(6))
            try await cluster.start()

            let pushed = await eventually(within: 120) { Self.pushedWrapIDs(sandbox).contains(gap.id.hex) }
            let diagnostics = pushed ? "" : await Self.diagnostics(gateway)
            #expect(pushed, "the wrap from the gap was pushed; \(diagnostics)")
            #expect(Self.pushedWrapIDs(sandbox).contains(flooding.id.hex), "and the flood's wrap, once")
            #expect(try await Self.metric(gateway, "linkstr_watch_relay_read_paused_seconds_total", ["relay": relay.url]) >= 5)
            if gapCase == .relayDropsEvents {
                #expect(try await Self.metric(gateway, "linkstr_watch_relay_resubscribed_after_pause_total", ["relay": relay.url]) >= 1)
                #expect(relay.subscribers.count == 1, "on the same connection")
            } else {
                #expect(relay.subscribers.count >= 2)
            }
            #expect(await gateway.stop(within: 30))
        }
        await relay.stop()
        await cluster.destroy()
    }

    // MARK: Limits

    /// The relay sends events with wrong ids on its first connection and valid ids with forged
    /// signatures on its second: each connection is closed after `WATCH_RELAY_MAX_INVALID`, the
    /// ids are found out without a signature check, the second reconnect waits twice as long as
    /// the first, and status and metrics say why.
    @Test(.timeLimit(.minutes(5))) func aRelaySendingInvalidEventsIsDisconnectedAndKeptAwayLongerEachTime() async throws {
        let bob = Keys.generate()
        let genuine = try RelayWatchTests.wrap(to: bob, "genuine")
        let wrongID = NostrEvent(
            id: genuine.id, pubkey: genuine.pubkey, createdAt: genuine.createdAt, kind: genuine.kind, tags: genuine.tags,
            content: genuine.content + "!", sig: genuine.sig)
        let forged = try RelayWatchTests.wrap(to: bob, "forged")
        let badSignature = NostrEvent(
            id: forged.id, pubkey: forged.pubkey, createdAt: forged.createdAt, kind: forged.kind, tags: forged.tags,
            content: forged.content, sig: genuine.sig)
        // The second connection's flood starts once the first connection's figures are read, so
        // that a slow read cannot see the second's signature checks.
        let relay = try HostileRelay { number in number == 1 ? .init(flood: .init(items: [.event(wrongID.json)], total: 30)) : .init() }
        try await relay.start()
        try await TestDatabase.with { url, _ in
            try await SandboxFixture.with { sandbox in
                // Logged at info, so that a failure below can say why each connection ended.
                let gateway = try await Self.start(
                    url, sandbox, relay, ["WATCH_RELAY_MAX_INVALID": "10", "LOG_LEVEL": "info"], watching: bob)
                defer { gateway.kill() }
                // CI keeps no files: a failure carries the relay's view and the gateway's.
                let story = { () -> String in
                    let log = (try? String(contentsOfFile: gateway.logPath, encoding: .utf8)) ?? ""
                    let lines = log.split(separator: "\n").filter { $0.contains("relay") }.suffix(30).map { $0.prefix(400) }
                    return "relay: \(relay.records)\ngateway:\n" + lines.joined(separator: "\n")
                }
                let signatureChecks = { try await Self.metric(gateway, "linkstr_watch_signature_checks_total", ["relay": relay.url]) }
                let disconnects = {
                    try await Self.metric(
                        gateway, "linkstr_watch_relay_limit_disconnects_total", ["relay": relay.url, "reason": "invalid"])
                }
                #expect(await eventually(within: 30) { relay.subscribers.first?.closed != nil }, "the first connection was closed")
                // The relay sees the close before the gateway has finished its close handshake.
                #expect(try await GatewayHarness.eventually { try await Self.relayStatus(gateway)?["last_limit"] == "invalid" })
                #expect(try await signatureChecks() == 0, "wrong ids cost no signature check; \(story())")
                // Readiness answers 503, without the watcher's part, when a read misses its deadline.
                let read = try await GatewayHarness.eventually(reading: { try await Self.relayStatus(gateway) }) { $0 != nil }
                #expect(read.done)
                let status = read.value
                #expect(status?["last_limit"] == "invalid" && status?["limit_disconnects"] == 1, "\(String(describing: status))")
                #expect((status?["invalid_events"]?.integerValue ?? 0) > 10)
                #expect(status?["error"] == .string(RelayError.limitExceeded(.invalid).description))

                #expect(await eventually(within: 60) { relay.subscribers.count >= 2 }, "reconnected: \(story())")
                relay.flood(.init(items: [.event(badSignature.json)], total: 30))
                #expect(await eventually(within: 60) { relay.subscribers.count >= 3 }, "reconnected twice: \(story())")
                let records = relay.subscribers
                if let first = records[0].closed, let second = records[1].closed {
                    // 5 s after the first breach, 10 s after the second (plus up to 25 % jitter).
                    #expect(records[1].opened - first >= .milliseconds(4_500), "first wait \(records[1].opened - first); \(story())")
                    #expect(records[2].opened - second >= .milliseconds(9_500), "second wait \(records[2].opened - second); \(story())")
                }
                let checks = try await signatureChecks()
                #expect(checks >= 11 && checks <= 30, "forged signatures were checked, one by one, until the limit (\(checks)); \(story())")
                #expect(try await disconnects() == 2, "\(story())")

                // The third connection behaves: its wraps are pushed.
                #expect(try await GatewayHarness.eventually(within: 15) { try await Self.relayStatus(gateway)?["state"] == "connected" })
                let real = try RelayWatchTests.wrap(to: bob, "after")
                relay.publish(real)
                #expect(await eventually(within: 20) { Self.pushedWrapIDs(sandbox).contains(real.id.hex) })
                #expect(await gateway.stop())
            }
        }
        await relay.stop()
    }

    /// A relay that sends faster than `WATCH_RELAY_MAX_EVENTS_PER_SECOND` (averaged over 10 s) is
    /// disconnected as a flood.
    @Test(.timeLimit(.minutes(3))) func aRelayPastItsRateIsDisconnectedAsAFlood() async throws {
        let bob = Keys.generate()
        let wrap = try RelayWatchTests.wrap(to: bob)
        let relay = try HostileRelay { number in number == 1 ? .init(flood: .init(items: [.event(wrap.json)])) : .init() }
        try await relay.start()
        try await TestDatabase.with { url, _ in
            try await SandboxFixture.with { sandbox in
                let gateway = try await Self.start(url, sandbox, relay, ["WATCH_RELAY_MAX_EVENTS_PER_SECOND": "200"], watching: bob)
                defer { gateway.kill() }
                // The rate is the connection's: the reconnect 5 s after the breach starts it again
                // from nothing, so it is sampled throughout rather than read once afterwards.
                let peakRate = Mutex(0.0)
                let sampler = Task {
                    while !Task.isCancelled {
                        let rate = (try? await Self.metric(gateway, "linkstr_watch_relay_events_per_second", ["relay": relay.url])) ?? 0
                        peakRate.withLock { $0 = max($0, rate) }
                        try? await Task.sleep(for: .milliseconds(200))
                    }
                }
                defer { sampler.cancel() }
                #expect(await eventually(within: 30) { relay.subscribers.first?.closed != nil }, "disconnected")
                // The relay sees the close before the gateway has finished its close handshake.
                #expect(try await GatewayHarness.eventually { try await Self.relayStatus(gateway)?["last_limit"] == "flood" })
                #expect(
                    try await Self.metric(gateway, "linkstr_watch_relay_limit_disconnects_total", ["reason": "flood", "relay": relay.url])
                        == 1)
                #expect(await eventually { peakRate.withLock { $0 } > 200 }, "peak \(peakRate.withLock { $0 }) events a second")
                #expect(await gateway.stop())
            }
        }
        await relay.stop()
    }

    // MARK: Relay text in logs

    /// Two thousand NOTICEs and CLOSEDs carrying a newline, a forged log line and terminal escapes:
    /// the gateway's log holds one line of relay text, escaped, and counts the rest.
    @Test(.timeLimit(.minutes(3))) func relayTextReachesTheLogEscapedAndThrottled() async throws {
        let bob = Keys.generate()
        let forgedLine = "2026-11-24T06:00:00+0000 critical linkstr-push : forged"
        let notice = JSONValue.array(["NOTICE", .string("slow down\n\(forgedLine)\u{1b}[2K")]).serialized
        let relay = try HostileRelay { number in
            number == 1 ? .init(flood: .init(items: [.message(notice), .closed("error: closed\n\(forgedLine)")], total: 2_000)) : .init()
        }
        try await relay.start()
        try await TestDatabase.with { url, _ in
            try await SandboxFixture.with { sandbox in
                let gateway = try await Self.start(url, sandbox, relay, ["LOG_LEVEL": "info"], watching: bob)
                defer { gateway.kill() }
                #expect(try await GatewayHarness.eventually(within: 30) { try await Self.relayStatus(gateway)?["notices"] == 1_000 })
                let suppressed = try await Self.metric(gateway, "linkstr_watch_relay_log_lines_suppressed_total", ["relay": relay.url])
                let (exited, log) = await gateway.terminate(within: 15)
                #expect(exited)
                let lines = log.split(separator: "\n")
                let relayText = lines.filter { $0.contains("relay.text=") }
                #expect((1...2).contains(relayText.count), "at most a line per 10 s for 2,000 relay texts: \(relayText)")
                #expect(!lines.contains { $0.hasPrefix(forgedLine) }, "no forged line")
                #expect(!log.contains("\u{1b}"), "no terminal escape")
                #expect(relayText.contains { $0.contains(#"\n2026-11-24T06:00:00+0000 critical"#) }, "escaped, still readable")
                #expect(suppressed >= 1_990)
            }
        }
        await relay.stop()
    }
}
