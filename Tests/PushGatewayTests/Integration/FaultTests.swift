import APNsSandbox
import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdTesting
import NostrProtocol
import PushGateway
import PushLoad
import Synchronization
import TestSupport
import Testing

/// Faults under a real `linkstr-push` process: its database going away and coming back, and what
/// its logs must never contain.
@Suite(.serialized) struct FaultTests {
    static func devices(_ cluster: PostgresCluster) async throws -> [String] {
        let (code, output) = try await ChildProcess.run(
            "/bin/bash",
            [
                "-c",
                """
                source '\(RustNostrPeer.repositoryRoot.path)/scripts/lib/postgres.sh'
                pg_as_owner "$(pg_bin_dir)/psql" -h 127.0.0.1 -p \(cluster.port) -U linkstr -d linkstr -qAt -c 'SELECT device_token FROM devices ORDER BY 1'
                """,
            ])
        guard code == 0 else { throw FixtureError("psql: \(output)") }
        return output.split(separator: "\n").map(String.init)
    }

    /// PostgreSQL stopped for 20 s and started again: the gateway reports not-ready, keeps serving
    /// `/healthz`, refuses what it cannot store with a clear error, recovers without a restart
    /// (registrations and deliveries both), and every registration it accepted is there.
    @Test func theDatabaseGoingAwayForTwentySecondsLosesNothingAccepted() async throws {
        let cluster = try PostgresCluster()
        try await cluster.start()
        defer { Task { await cluster.destroy() } }
        try await SandboxFixture.with { sandbox in
            let database = try DatabaseURL(parsing: cluster.url)
            // Debug level: if the shutdown below ever stalls, the log says which service it waits for.
            let gateway = try await GatewayProcess.start(database: database, sandbox: sandbox, environment: ["LOG_LEVEL": "debug"])
            defer { gateway.kill() }
            let keys = Keys.generate()
            let before = "aa" + String(repeating: "01", count: 31), after = "bb" + String(repeating: "02", count: 31)
            #expect(try await gateway.send(keys, "POST", "/v1/devices/register", json: GatewayHarness.registerBody(before)) == 202)

            try await cluster.stop()
            let down = ContinuousClock.now
            #expect(try await GatewayHarness.eventually(within: 15) { try await gateway.get("/readyz").status == 503 })
            #expect(try await gateway.get("/healthz").status == 200, "alive while the database is away")
            let refused = try await gateway.send(
                keys, "POST", "/v1/devices/register", json: GatewayHarness.registerBody("cc" + String(repeating: "03", count: 31)))
            #expect(refused == 500, "not accepted: the client will retry")
            let remaining = .seconds(20) - (ContinuousClock.now - down)
            if remaining > .zero { try await Task.sleep(for: remaining) }
            #expect(try await gateway.get("/healthz").status == 200)

            try await cluster.start()
            #expect(
                try await GatewayHarness.eventually(within: 30) { try await gateway.get("/readyz").status == 200 },
                "recovered without a restart")
            #expect(try await gateway.send(keys, "POST", "/v1/devices/register", json: GatewayHarness.registerBody(after)) == 202)
            #expect(try await Self.devices(cluster) == [before, after])
            // Delivery resumed too: its loops were mid-statement when the database went away.
            let sender = Keys.generate()
            let push =
                #"{"notification_type":"new_post","event_id":"after-outage","conversation_id":"c1","recipient_pubkeys":["\#(keys.publicKey.hex)"]}"#
            #expect(try await gateway.send(sender, "POST", "/v1/push", json: push) == 202)
            #expect(
                try await GatewayHarness.eventually(within: 15) { Set(sandbox.delivered().map(\.deviceToken)) == [before, after] },
                "both devices get the push sent after the outage")
            let (exited, log) = await gateway.terminate(within: 30)
            #expect(
                exited && !log.contains("did not finish in time"),
                "and it still shuts down gracefully, without being cut at SHUTDOWN_TIMEOUT_SECONDS; the end of its log:\n\(log.suffix(6_000))"
            )
        }
    }

    /// Device tokens, keys and secrets never reach the logs, even at trace level.
    @Test func logsNeverCarryTokensKeysOrSecrets() async throws {
        let cluster = try PostgresCluster()
        try await cluster.start()
        defer { Task { await cluster.destroy() } }
        try await SandboxFixture.with { sandbox in
            let nsec = Keys.generate().secretKey
            let adminToken = "admin-" + Hex.encode(SecureRandom.bytes(16))
            let gateway = try await GatewayProcess.start(
                database: try DatabaseURL(parsing: cluster.url), sandbox: sandbox,
                environment: [
                    "LOG_LEVEL": "trace", "LOG_FORMAT": "json", "GATEWAY_NSEC": nsec.exportNsec(), "ADMIN_TOKEN": adminToken,
                ])
            let alice = Keys.generate(), bob = Keys.generate()
            let token = "ab" + Hex.encode(SecureRandom.bytes(31))
            #expect(try await gateway.send(bob, "POST", "/v1/devices/register", json: GatewayHarness.registerBody(token)) == 202)
            #expect(try await gateway.send(bob, "POST", "/v1/devices/register", json: GatewayHarness.registerBody("zz")) == 400)
            let push =
                #"{"notification_type":"new_post","event_id":"e1","conversation_id":"c1","recipient_pubkeys":["\#(bob.publicKey.hex)"]}"#
            #expect(try await gateway.send(alice, "POST", "/v1/push", json: push) == 202)
            #expect(try await GatewayHarness.eventually { sandbox.delivered().count == 1 })
            _ = try await gateway.get("/admin/status")
            #expect(try await gateway.send(bob, "POST", "/v1/devices/unregister", json: #"{"device_token":"\#(token)"}"#) == 202)
            try await Task.sleep(for: .milliseconds(300))
            // Read before stopping: a graceful stop removes the log file.
            let log = try String(contentsOfFile: gateway.logPath, encoding: .utf8)
            #expect(await gateway.stop(within: 15))
            #expect(log.count > 1_000, "trace logging produced output to check")
            let secrets: [(String, String)] = [
                ("device token", token), ("device token (uppercase)", token.uppercased()),
                ("gateway nsec", nsec.exportNsec()), ("gateway secret (hex)", nsec.exportHex()),
                ("admin token", adminToken), ("APNs key", String(sandbox.keyPEM.split(separator: "\n")[1])),
                ("client secret", alice.secretKey.exportHex()), ("client secret", bob.secretKey.exportHex()),
            ]
            for (what, secret) in secrets { #expect(!log.contains(secret), "the log contains the \(what)") }
            #expect(log.contains(String(token.suffix(6))), "tokens appear redacted to their last 6 characters")
        }
    }
}

extension FaultTests {
    /// APNs answering 500 and 429 storms (scripted per token by the sandbox) and then recovering:
    /// delivery backs off, retries with the same apns-id, and every push lands exactly once.
    @Test func deliveryRidesOutA500And429StormAndLandsEveryPushOnce() async throws {
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns) { gateway in
                let sender = Keys.generate()
                var recipients: [Keys] = []
                var tokens: [String] = []
                for index in 0..<24 {
                    let keys = Keys.generate()
                    let prefix = index < 8 ? "" : index < 16 ? "05002" : "04292"
                    let token = HTTP2DeliveryTests.token(prefix: prefix, UInt8(0x30 + index))
                    try await HTTP2DeliveryTests.register(gateway, keys, token)
                    recipients.append(keys)
                    tokens.append(token)
                }
                let body = ArchiveAndPushTests.pushBody("new_post", event: "storm-1", conversation: "c", to: recipients)
                #expect(try await gateway.send(sender, .post, "/v1/push", json: body).status == .accepted)
                #expect(try await GatewayHarness.eventually(within: 30) { sandbox.delivered().count == 24 })
                let delivered = sandbox.delivered()
                #expect(Set(delivered.map(\.deviceToken)) == Set(tokens), "every device once")
                #expect(delivered.count == 24, "none twice")
                let failures = sandbox.state.records().filter { $0.status != 200 }
                #expect(
                    failures.filter { $0.status == 500 }.count == 16 && failures.filter { $0.status == 429 }.count == 16,
                    "each stormy token failed twice first")
                // Each retry kept its job's apns-id.
                for token in tokens {
                    let ids = Set(sandbox.state.records().filter { $0.deviceToken == token }.compactMap(\.apnsID))
                    #expect(ids.count == 1)
                }
                #expect(try await GatewayHarness.eventually { try await gateway.count("SELECT count(*)::int FROM push_queue") == 0 })
            }
        }
    }
}

extension FaultTests {
    /// `push-load` end to end against a real gateway process, relay and sandbox, small and short:
    /// it registers, publishes, pushes, matches every delivery and writes its CSV and plot.
    @Test func pushLoadDrivesTheWholeSystemAndMatchesEveryDelivery() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        try await TestDatabase.with { url, _ in
            try await SandboxFixture.with { sandbox in
                let gateway = try await GatewayProcess.start(database: url, sandbox: sandbox, environment: ["RELAYS": relay.url])
                defer { gateway.kill() }
                let out = FileManager.default.temporaryDirectory.appendingPathComponent("push-load-\(UUID().uuidString)").path
                defer { try? FileManager.default.removeItem(atPath: out) }
                let (code, output) = try await ChildProcess.run(
                    try ChildProcess.builtProduct("push-load"),
                    [
                        "--gateway", gateway.baseURL, "--relay", relay.url, "--sandbox", sandbox.url, "--ca", sandbox.caFile,
                        "--users", "40", "--senders", "3", "--wrap-rate", "10", "--push-rate", "10", "--duration", "2", "--drain", "20",
                        "--out", out,
                    ], timeout: .seconds(120))
                #expect(code == 0, "\(output)")
                #expect(output.contains("registrations/s") && output.contains("errors: none"), "\(output)")
                #expect(output.contains("(40 delivered to the sandbox)"), "20 wraps and 20 typed pushes, all matched: \(output)")
                let csv = try String(contentsOfFile: out + "/results.csv", encoding: .utf8).split(separator: "\n")
                #expect(csv.first == "kind,id,sent_s,delivered_s,latency_ms" && csv.count == 41)
                // The chart renders (rsvg-convert) at its size, parses as XML, and names both kinds.
                let (width, height) = try await LoadChartTests.renderPNG(out + "/latency.svg")
                #expect(width == LoadChart.width && height == LoadChart.height)
                let chart = try await LoadChartTests.parse(out + "/latency.svg")
                #expect(chart.texts.contains("40 requests sent, 40 delivered · lines are per second"), "\(chart.texts)")
                #expect(
                    chart.texts.contains("gift wraps") && chart.texts.contains("typed pushes")
                        && chart.texts.contains("time since start (s)"))
                #expect(chart.circles == 40 + 2, "a dot per delivery and a legend swatch per kind")
                if let keep = ProcessInfo.processInfo.environment["LOAD_CHART_OUT"], !keep.isEmpty {
                    for name in ["latency.svg", "latency.png"] {
                        try? FileManager.default.copyItem(atPath: out + "/" + name, toPath: keep + "/push-load-" + name)
                    }
                }
                // Loopback only.
                let refused = try await ChildProcess.run(
                    try ChildProcess.builtProduct("push-load"), ["--gateway", "http://example.com:8787"])
                #expect(refused.code != 0 && refused.output.contains("must target loopback"))
            }
        }
    }
}

extension FaultTests {
    /// A hostile relay (scripts/interop/hostile_relay.py): an oversized frame, then binary frames,
    /// non-JSON, wrong shapes, absurd numbers, deep nesting, a forged event, unsolicited answers.
    /// The watcher drops the connection or the message as each deserves, stays up and ready, and
    /// still pushes the real gift wrap that follows.
    @Test func aHostileRelayDoesNotTakeTheWatcherDown() async throws {
        let watched = Keys.generate(), sender = Keys.generate()
        let wrap = try GiftWrap.make(
            UnsignedEvent(pubkey: sender.publicKey, kind: 14, content: "hi"), author: sender, recipient: watched.publicKey)
        let wrapFile = FileManager.default.temporaryDirectory.appendingPathComponent("wrap-\(UUID().uuidString).json")
        try wrap.json.write(to: wrapFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: wrapFile) }
        let port = try LoopbackPort.free()
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-\(port).log").path
        let relay = try ChildProcess(
            executable: RustNostrPeer.python,
            arguments: [
                RustNostrPeer.repositoryRoot.appendingPathComponent("scripts/interop/hostile_relay.py").path, String(port), wrapFile.path,
            ], logPath: log)
        defer { relay.kill() }
        #expect(try await GatewayHarness.eventually { LoopbackPort.accepts(port) })
        try await TestDatabase.with { url, _ in
            try await SandboxFixture.with { sandbox in
                let gateway = try await GatewayProcess.start(
                    database: url, sandbox: sandbox, environment: ["RELAYS": "ws://127.0.0.1:\(port)"])
                defer { gateway.kill() }
                let token = "ee" + String(repeating: "0e", count: 31)
                #expect(
                    try await gateway.send(
                        watched, "POST", "/v1/devices/register",
                        json: GatewayHarness.registerBody(token, extra: #","relay_watch":true"#)) == 202)
                #expect(
                    try await GatewayHarness.eventually(within: 30) { sandbox.delivered().contains { $0.deviceToken == token } },
                    "the real wrap after the abuse was pushed")
                #expect(gateway.process.isRunning)
                #expect(try await GatewayHarness.eventually { try await gateway.get("/readyz").status == 200 })
                let connections =
                    (try? String(contentsOfFile: log, encoding: .utf8))?.split(separator: "\n").filter { $0.hasPrefix("connection") }.count
                    ?? 0
                #expect(connections >= 2, "the oversized frame cost one connection, and the watcher came back")
                #expect(
                    try await gateway.metric(#"linkstr_watch_invalid_events_total{relay="ws://127.0.0.1:\#(port)"}"#) >= 1,
                    "the forgery was counted")
                #expect(await gateway.stop(), "and it still shuts down gracefully")
            }
        }
    }
}

extension FaultTests {
    /// Three instances on one database, typed pushes and gift wraps flowing, one instance
    /// SIGKILLed mid-burst: the survivors take its shards and its leased jobs, every accepted push
    /// reaches its device, and every gift wrap is pushed exactly once.
    @Test func threeInstancesOneKilledUnderLoadLoseNoPush() async throws {
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        try await TestDatabase.with { url, database in
            try await SandboxFixture.with { sandbox in
                // Sixty pushes to each device in two seconds: far past the production alert budget,
                // which this test is not about (it has its own tests).
                let settings = [
                    "RELAYS": relay.url, "WATCH_SHARDS": "6", "WATCH_LEASE_SECONDS": "3", "WATCH_COALESCE_SECONDS": "0",
                    // A job leased by the killed instance is sent again when its lease lapses; 10 s,
                    // not less, so that a send merely slowed by a busy machine is not sent twice.
                    "DELIVERY_LEASE_SECONDS": "10", "LOG_LEVEL": "debug", "PUSH_DEVICE_BUDGET": "0",
                ]
                var instances: [GatewayProcess] = []
                for _ in 0..<3 { instances.append(try await GatewayProcess.start(database: url, sandbox: sandbox, environment: settings)) }
                let (a, b, c) = (instances[0], instances[1], instances[2])
                defer { for instance in instances { instance.kill() } }
                var watchers: [Keys] = []
                while Set(watchers.map { WatchShard.of(pubkey: $0.publicKey.hex, shards: 6) }).count < 6 || watchers.count < 9 {
                    watchers.append(Keys.generate())
                }
                for (index, keys) in watchers.enumerated() {
                    let body = GatewayHarness.registerBody(HTTP2DeliveryTests.token(UInt8(0x60 + index)), extra: #","relay_watch":true"#)
                    #expect(try await a.send(keys, "POST", "/v1/devices/register", json: body) == 202)
                }
                let typedUsers = (0..<6).map { _ in Keys.generate() }
                for (index, keys) in typedUsers.enumerated() {
                    #expect(
                        try await b.send(
                            keys, "POST", "/v1/devices/register",
                            json: GatewayHarness.registerBody(HTTP2DeliveryTests.token(UInt8(0x90 + index)))) == 202)
                }
                let owners = "SELECT count(DISTINCT owner)::int FROM watch_shards WHERE owner IS NOT NULL AND expires_at > now()"
                #expect(
                    try await GatewayHarness.eventually(within: 15) { try await TestDatabase.count(database, owners) == 3 },
                    "three instances share the shards")
                // Each watcher's REQ must be live before its first wrap is published: a wrap a relay
                // already holds when the REQ arrives comes back as history, which is never pushed
                // (its `created_at` is randomised into the past, so nothing tells it from an old
                // one). On a loaded machine the REQs can take seconds.
                let running = instances
                let livePubkeys: @Sendable () async throws -> Int = {
                    var total = 0
                    for instance in running {
                        let ready = try JSONValue(parsing: Array(try await instance.get("/readyz").body.utf8))
                        guard case .array(let relays)? = ready["watch"]?["relays"] else { continue }
                        total += relays.compactMap { $0["live_pubkeys"]?.integerValue }.reduce(0) { $0 + Int($1) }
                    }
                    return total
                }
                let watched = watchers.count
                #expect(
                    try await GatewayHarness.eventually(within: 30) { try await livePubkeys() == watched },
                    "every watched pubkey is live on the relay")

                // The burst: typed pushes round robin over the three; gift wraps in three rounds;
                // c dies after the first round.
                let sender = Keys.generate()
                let all = instances, recipients = typedUsers
                let pushTask = Task { () -> [String] in
                    var accepted: [String] = []
                    for index in 0..<60 {
                        let event = "burst-\(index)"
                        let body = ArchiveAndPushTests.pushBody("new_post", event: event, conversation: "c", to: recipients)
                        // A client whose instance vanished goes to another one (a dead address only
                        // costs the HTTP client's connect retries until its timeout).
                        var target = all[index % 3]
                        if !target.process.isRunning { target = all[index % 2] }
                        let status = (try? await target.send(sender, "POST", "/v1/push", json: body)) ?? 0
                        if status == 202 { accepted.append(event) }
                        try? await Task.sleep(for: .milliseconds(30))
                    }
                    return accepted
                }
                var wraps: [NostrEvent] = []
                for round in 0..<3 {
                    let batch = try watchers.map { try RelayWatchTests.wrap(to: $0, "round \(round)") }
                    wraps += batch
                    // The relay is busy serving three watchers (and, in the full suite, other
                    // tests share the cores): a publish that times out is sent again on a new
                    // connection (the relay answers a repeat as a duplicate). One CI run saw the
                    // Python relay silent for over 15 s; this test is about failover, not that.
                    for attempt in 1...6 {
                        do {
                            try await RelayWatchTests.publish(batch, to: relay)
                            break
                        } catch  where attempt < 6 {
                            continue
                        }
                    }
                    if round == 0 {
                        try await Task.sleep(for: .milliseconds(300))
                        c.kill()
                    }
                    try await Task.sleep(for: .milliseconds(500))
                }
                let accepted = await pushTask.value
                let published = Set(wraps.map(\.id.hex))
                #expect(accepted.count >= 40, "the instances that lived took their share")

                #expect(
                    try await GatewayHarness.eventually(within: 40) {
                        let delivered = Set(
                            sandbox.delivered().compactMap { record -> String? in
                                guard let event = (try? JSONValue(parsing: record.payload))?["event_id"]?.stringValue else { return nil }
                                return event + "/" + record.deviceToken
                            })
                        return accepted.allSatisfy { event in
                            typedUsers.indices.allSatisfy { delivered.contains("\(event)/\(HTTP2DeliveryTests.token(UInt8(0x90 + $0)))") }
                        }
                    }, "every accepted typed push reached every device")
                // Every wrap reaches its device. Wraps that arrive together (the ones published
                // while c's shards had no watcher come in one history batch at the takeover) are
                // coalesced into one push that carries their count, so count them per device.
                let tokens = Dictionary(
                    uniqueKeysWithValues: watchers.enumerated().map {
                        ($0.element.publicKey.hex, HTTP2DeliveryTests.token(UInt8(0x60 + $0.offset)))
                    })
                let expectedPerDevice = Dictionary(grouping: wraps.indices) { tokens[watchers[$0 % watchers.count].publicKey.hex]! }
                    .mapValues(\.count)
                let coveredPerDevice: @Sendable () -> [String: Int] = {
                    var covered: [String: Int] = [:]
                    for record in RelayWatchTests.giftWrapDeliveries(sandbox) {
                        covered[record.deviceToken, default: 0] += Int(
                            (try? JSONValue(parsing: record.payload))?["count"]?.integerValue ?? 1)
                    }
                    return covered
                }
                let everyWrapArrived = try await GatewayHarness.eventually(within: 40) { coveredPerDevice() == expectedPerDevice }
                #expect(
                    everyWrapArrived,
                    "every gift wrap reached its device, including those in c's shards after it died: \(coveredPerDevice()) vs \(expectedPerDevice)"
                )
                if !everyWrapArrived {
                    // CI keeps no files: say which wraps went missing and what each instance logged of them.
                    let pushed = Set(
                        RelayWatchTests.giftWrapDeliveries(sandbox).compactMap {
                            try? JSONValue(parsing: $0.payload)["wrap_id"]?.stringValue
                        })
                    for (index, wrap) in wraps.enumerated() where !pushed.contains(wrap.id.hex) {
                        let watcher = watchers[index % watchers.count].publicKey.hex
                        var lines: [String] = []
                        for (name, instance) in zip(["a", "b", "c"], instances) {
                            let log = (try? String(contentsOfFile: instance.logPath, encoding: .utf8)) ?? ""
                            lines += log.split(separator: "\n").filter { $0.contains(wrap.id.hex) || $0.contains(watcher) }.suffix(8)
                                .map { "\(name): \($0.prefix(300))" }
                        }
                        Issue.record(
                            """
                            not pushed (or pushed under another wrap's id): wrap \(wrap.id.hex) of round \(index / watchers.count) to \(watcher), \
                            shard \(WatchShard.of(pubkey: watcher, shards: 6)):
                            \(lines.joined(separator: "\n"))
                            """)
                    }
                }
                let pushedIDs = RelayWatchTests.giftWrapDeliveries(sandbox).compactMap {
                    try? JSONValue(parsing: $0.payload)["wrap_id"]?.stringValue
                }
                #expect(Set(pushedIDs).count == pushedIDs.count && Set(pushedIDs).isSubset(of: published), "no wrap pushed twice")
                #expect(await a.stop(), "the survivors shut down gracefully")
                #expect(await b.stop(), "the survivors shut down gracefully")
            }
        }
    }
}

extension FaultTests {
    /// The sandbox lowers its stream limit to 1 on the open connections between bursts (SETTINGS,
    /// as Apple may send): delivery keeps to the new limit and completes.
    ///
    /// The default NIO transport only: with `APNS_TRANSPORT=async-http-client`, AsyncHTTPClient
    /// 1.37's connection pool trips an internal assertion (HTTPConnectionPool.swift:447, an idle
    /// timer scheduled twice) when a server lowers the limit on a live connection.
    @Test(arguments: [APNsTransportKind.nio])
    func loweringTheStreamLimitToOneMidBurstSlowsDeliveryButLosesNothing(transport: APNsTransportKind) async throws {
        try await SandboxFixture.with(maxConcurrentStreams: 50, latencyMilliseconds: 20) { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns(transport)) { gateway in
                var recipients: [Keys] = []
                for index in 0..<60 {
                    let keys = Keys.generate()
                    try await HTTP2DeliveryTests.register(gateway, keys, HTTP2DeliveryTests.token(UInt8(0x20 + index)))
                    recipients.append(keys)
                }
                let sender = Keys.generate()
                #expect(
                    try await gateway.send(
                        sender, .post, "/v1/push", json: ArchiveAndPushTests.pushBody("new_post", event: "first", to: recipients)
                    ).status == .accepted)
                #expect(try await GatewayHarness.eventually { sandbox.delivered().count == 60 })
                #expect(sandbox.state.statistics.peakConcurrentStreams > 1, "before: streams in parallel")

                sandbox.state.setMaxConcurrentStreams(1)
                try await Task.sleep(for: .milliseconds(200))
                #expect(
                    try await gateway.send(
                        sender, .post, "/v1/push", json: ArchiveAndPushTests.pushBody("new_post", event: "second", to: recipients)
                    ).status == .accepted)
                #expect(
                    try await GatewayHarness.eventually(within: 30) { sandbox.delivered().count == 120 },
                    "everything delivered after the change")
                #expect(sandbox.state.statistics.peakConcurrentStreams <= 1, "after: one stream at a time on each connection")
                #expect(sandbox.state.records().filter { $0.status != 200 }.isEmpty)
            }
        }
    }

    /// APNs sends GOAWAY before it takes a server down: the streams the gateway had opened after
    /// the GOAWAY's last stream id were never processed. The gateway must send exactly those again
    /// on a fresh connection: every push arrives, none twice.
    @Test func aGoAwayMidBurstSendsTheRefusedStreamsAgainOnAFreshConnection() async throws {
        try await SandboxFixture.with(maxConcurrentStreams: 100, latencyMilliseconds: 20) { sandbox in
            try await GatewayHarness.run(deliver: true, apns: sandbox.apns) { gateway in
                var recipients: [Keys] = []
                for index in 0..<60 {
                    let keys = Keys.generate()
                    try await HTTP2DeliveryTests.register(gateway, keys, HTTP2DeliveryTests.token(UInt8(0x20 + index)))
                    recipients.append(keys)
                }
                sandbox.state.scheduleGoAway(afterPushes: 10)
                let sender = Keys.generate()
                #expect(
                    try await gateway.send(
                        sender, .post, "/v1/push", json: ArchiveAndPushTests.pushBody("new_post", event: "goaway", to: recipients)
                    ).status == .accepted)
                #expect(try await GatewayHarness.eventually(within: 30) { sandbox.delivered().count == 60 })
                try await Task.sleep(for: .milliseconds(300))
                let stats = sandbox.state.statistics
                #expect(stats.goAwaysSent == 1)
                // Requests were in flight past the GOAWAY's last stream id, so the re-send path ran.
                let metrics = String(decoding: await gateway.metrics.exposition(), as: UTF8.self)
                let resent =
                    metrics.split(separator: "\n").first { $0.hasPrefix("linkstr_apns_goaway_resends_total ") }
                    .flatMap { Int($0.split(separator: " ")[1]) } ?? 0
                #expect(resent > 0)
                #expect(!metrics.contains(#"outcome="retry""#), "re-sent at once, not failed into the retry backoff")
                let records = sandbox.state.records()
                #expect(records.count == 60, "each push answered once: nothing refused was recorded, nothing sent twice")
                #expect(Set(records.map(\.deviceToken)).count == 60)
                #expect(records.allSatisfy { $0.status == 200 })
                #expect(try await gateway.count("SELECT count(*)::int FROM push_queue") == 0)
            }
        }
    }
}

extension FaultTests {
    /// The database host going silent, with no reset (a network partition; scripts/interop/
    /// freeze_proxy.py between the gateway and PostgreSQL): `/readyz` still answers 503 within its
    /// timeout and a registration gets its 500 within the storage timeout, instead of hanging on
    /// a statement that will not be answered. Once the network is back, so is the gateway.
    @Test func aSilentDatabaseGetsQuickAnswersNotHungRequests() async throws {
        try await TestDatabase.with { url, client in
            let proxyPort = try LoopbackPort.free()
            let proxy = try ChildProcess(
                executable: RustNostrPeer.python,
                arguments: [
                    RustNostrPeer.repositoryRoot.appendingPathComponent("scripts/interop/freeze_proxy.py").path, String(proxyPort),
                    String(url.port),
                ], unblockSignals: true)
            defer { proxy.kill() }
            #expect(await eventually { LoopbackPort.accepts(proxyPort) }, "the proxy listens")
            let proxied = {
                var proxied = url
                proxied.port = proxyPort
                return proxied
            }()
            try await SandboxFixture.with { sandbox in
                let gateway = try await GatewayProcess.start(database: proxied, sandbox: sandbox)
                defer { gateway.kill() }
                let keys = Keys.generate()
                let first = "ab" + String(repeating: "07", count: 31), second = "ac" + String(repeating: "08", count: 31)
                #expect(try await gateway.send(keys, "POST", "/v1/devices/register", json: GatewayHarness.registerBody(first)) == 202)

                proxy.signal(SIGUSR1)
                try await Task.sleep(for: .milliseconds(300)) // the proxy handles the signal on its loop
                // /readyz answers from a snapshot at most a second old: a probe may still see the
                // last good answer, a later one (after the snapshot's second) its refresh, 503.
                // Every probe answers within the readiness timeout, stalled database or not.
                let slowest = Mutex(Duration.zero)
                #expect(
                    try await GatewayHarness.eventually(within: 15) {
                        let began = ContinuousClock.now
                        let status = try await gateway.get("/readyz").status
                        slowest.withLock { $0 = max($0, ContinuousClock.now - began) }
                        return status == 503
                    }, "not ready while the database is stalled")
                #expect(slowest.withLock { $0 } < .seconds(5), "readyz answered within its timeout: \(slowest.withLock { $0 })")
                let started = ContinuousClock.now
                #expect(try await gateway.send(keys, "POST", "/v1/devices/register", json: GatewayHarness.registerBody(second)) == 500)
                #expect(
                    ContinuousClock.now - started < .seconds(10),
                    "the registration was refused within the storage timeout: \(ContinuousClock.now - started)")
                #expect(try await gateway.get("/healthz").status == 200)

                proxy.signal(SIGUSR2)
                #expect(try await GatewayHarness.eventually(within: 30) { try await gateway.get("/readyz").status == 200 }, "recovered")
                #expect(try await gateway.send(keys, "POST", "/v1/devices/register", json: GatewayHarness.registerBody(second)) == 202)
                #expect(try await TestDatabase.count(client, "SELECT count(*)::int FROM devices") == 2)
                #expect(await gateway.stop(within: 30))
            }
        }
    }
}
