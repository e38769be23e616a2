import Foundation
import TestSupport
import Testing

/// `scripts/bench-compare.sh`: the figures it reads from a benchmark's output and the table it
/// makes of alternated runs. The full run's smoke benchmarks (scripts/test.sh) check that it
/// still finds its figures in the benchmarks' real output; these check what it makes of them.
struct BenchCompareScriptTests {
    static let script = RustNostrPeer.repositoryRoot.appendingPathComponent("scripts/bench-compare.sh").path

    /// Runs the script with `arguments`; its exit code and output.
    static func run(_ arguments: [String]) async throws -> (code: Int32, output: String) {
        try await ChildProcess.run("/bin/bash", [script] + arguments, timeout: .seconds(30))
    }

    /// A folder of its own for the test's files, removed after.
    static func withFolder<T>(_ body: (URL) async throws -> T) async throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bench-compare-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        return try await body(folder)
    }

    /// The `name value` lines `--figures` prints for `log`, as pairs in order.
    static func figures(_ bench: String, log: String) async throws -> [String] {
        try await withFolder { folder in
            let path = folder.appendingPathComponent("run.log").path
            try log.write(toFile: path, atomically: true, encoding: .utf8)
            let (code, output) = try await run(["--figures", bench, path])
            #expect(code == 0, "\(output)")
            return output.split(separator: "\n").map(String.init)
        }
    }

    /// Lines as `scripts/bench-gateway.sh` prints them. Each transport's phase prints its pushes/s
    /// and CPU per push, in the order APNs, FCM, Web Push. The sandbox's own cost comes from the
    /// h2load phase and the APNs phase.
    @Test func aGatewayRunGivesItsRegistrationAndEachTransportsFigures() async throws {
        let log = """
            ==> 1. APNs sandbox capacity (h2load: 2 connections x 100 streams, 100000 pushes, no provider-token check)
            finished in 1.18s, 84790.32 req/s, 6.90MB/s
            requests: 100000 total, 100000 started, 100000 done, 100000 succeeded, 0 failed, 0 errored, 0 timeout
            CPU per request under h2load (µs; 100000 requests): sandbox 11.4
            ==> 2. registration SQL alone (pgbench, prepared, 32 clients, 10 s)
            latency average = 2.475 ms
            tps = 12931.024997 (without initial connection time)
            registrations: 20000 in 2.52 s = 7926 registrations/s; latency ms p50 3.9 p99 7.8
            CPU during registrations (seconds; 6.2 available on 2 cores): gateway 2.9 sandbox 0.0 postgres 1.1, load tool 1.0
            CPU per registration (µs; 20000 in the window): gateway 145 sandbox 0 postgres 55; gateway + postgres 200
            pushes/s (notifications to apns): 23518
            CPU per push (µs; 50000 in the window): gateway 28 sandbox 18 postgres 24; gateway + postgres 52
            pushes/s (notifications to fcm): 7171
            CPU per push (µs; 50000 in the window): gateway 168 sandbox 40 postgres 28; gateway + postgres 196
            pushes/s (notifications to webpush): 3623
            CPU per push (µs; 50000 in the window): gateway 316 sandbox 154 postgres 30; gateway + postgres 346

            """
        #expect(
            try await Self.figures("gateway", log: log) == [
                "h2load_req_per_s 84790.32", "h2load_sandbox_us 11.4", "pgbench_tps 12931.024997", "registrations_per_s 7926",
                "apns_pushes_per_s 23518", "fcm_pushes_per_s 7171", "webpush_pushes_per_s 3623", "registration_cpu_us 200",
                "registration_postgres_us 55", "apns_cpu_per_push_us 52", "apns_postgres_us 24", "apns_sandbox_us 18",
                "fcm_cpu_per_push_us 196", "webpush_cpu_per_push_us 346",
            ])
    }

    /// The inbox benchmark prints its warm-up stream's latency first and the measured stream's
    /// after: the measured one counts. Peak memory is in MB.
    @Test func anInboxRunGivesTheMeasuredStreamsFigures() async throws {
        let log = """
            warm-up EVENT-to-OK latency ms: p50 7.0  p95 11.6  p99 18.0  max 25.9
            warm-up publish-to-APNs latency ms: p50 7.0  p95 12.0  p99 18.0  max 28.0
            EVENT-to-OK latency ms: p50 6.8  p95 10.1  p99 14.6  max 21.3
            publish-to-APNs latency ms: p50 6.9  p95 11.0  p99 16.0  max 23.9
            CPU per wrap (µs; 50000 in the window): gateway 110 sandbox 30 postgres 114; gateway + postgres 224
            gateway VmHWM:\t   56112 kB

            """
        #expect(
            try await Self.figures("inbox", log: log) == [
                "p50_ms 6.9", "p99_ms 16.0", "cpu_per_wrap_us 224", "gateway_us 110", "postgres_us 114", "sandbox_us 30", "peak_mb 54.8",
            ])
    }

    /// The watcher's latency line names relay-to-APNs, not publish-to-APNs. A run of two streams
    /// (`ROUNDS=2`) prints each figure twice: the last stream's count.
    @Test func aWatchRunGivesItsLastStreamsFigures() async throws {
        let log = """
            relay-to-APNs latency ms: p50 16.0  p95 25.4  p99 35.3  max 62.3
            CPU per wrap (µs; 100000 in the window): gateway 78 sandbox 27 postgres 53; gateway + postgres 131
            gateway VmHWM:\t   92120 kB
            relay-to-APNs latency ms: p50 14.7  p95 27.7  p99 41.6  max 80.2
            CPU per wrap (µs; 200000 in the window): gateway 81 sandbox 27 postgres 50; gateway + postgres 130
            gateway VmHWM:\t   94208 kB

            """
        #expect(
            try await Self.figures("watch", log: log) == [
                "p50_ms 14.7", "p99_ms 41.6", "cpu_per_wrap_us 130", "gateway_us 81", "postgres_us 50", "sandbox_us 27", "peak_mb 92.0",
            ])
    }

    /// An idle run gives the gateway's and PostgreSQL's CPU a second, and PostgreSQL's alone.
    @Test func anIdleRunGivesEachProcesssCPUASecond() async throws {
        let log = """
            CPU during idle (seconds; 60.2 available on 2 cores): gateway 0.19 postgres 0.02
            idle CPU (ms a second): gateway 6.3 postgres 0.7; PostgreSQL alone before the gateway started: 0.3

            """
        #expect(
            try await Self.figures("idle", log: log) == [
                "idle_gateway_ms_per_s 6.3", "idle_postgres_ms_per_s 0.7", "postgres_alone_ms_per_s 0.3",
            ])
    }

    /// Output with none of the figures (a run that failed early) is an error, not an empty row.
    @Test func aRunWithoutFiguresIsAnError() async throws {
        try await Self.withFolder { folder in
            let path = folder.appendingPathComponent("failed.log").path
            try "==> starting PostgreSQL\nerror: could not connect\n".write(toFile: path, atomically: true, encoding: .utf8)
            let (code, output) = try await Self.run(["--figures", "gateway", path])
            #expect(code == 1)
            #expect(output.contains("no gateway figures in \(path)"), "\(output)")
            let (unknown, refusal) = try await Self.run(["--figures", "ingest", path])
            #expect(unknown == 2)
            #expect(refusal.contains("BENCH must be watch, inbox, gateway or idle"), "\(refusal)")
        }
    }

    /// Two rounds of A B B A: each build's mean and range over its four runs, the mean over the
    /// rounds of each round's B mean less its A mean, and in how many rounds B was lower.
    @Test func theSummaryComparesEachRoundsMeans() async throws {
        try await Self.withFolder { folder in
            let runs: [(round: Int, build: String, value: Double)] = [
                (1, "A", 10), (1, "B", 8), (1, "B", 9), (1, "A", 12),
                (2, "A", 11), (2, "B", 12), (2, "B", 11), (2, "A", 11),
            ]
            var rows = runs.map { "\($0.round)\t\($0.build)\tcpu_per_wrap_us\t\($0.value)" }
            rows += runs.map { "\($0.round)\t\($0.build)\tp99_ms\t\(100 - $0.value)" }
            try (rows.joined(separator: "\n") + "\n").write(
                to: folder.appendingPathComponent("figures.tsv"), atomically: true, encoding: .utf8)
            let (code, output) = try await Self.run(["--summary", folder.path])
            #expect(code == 0, "\(output)")
            let table = output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
            #expect(table.first == ["figure", "A", "mean", "(range)", "B", "mean", "(range)", "B", "-", "A", "B", "<", "A"])
            // Round 1: B 8.5 against A 11 (-2.5); round 2: B 11.5 against A 11 (+0.5).
            #expect(table.contains(["cpu_per_wrap_us", "11.0", "(10-12)", "10.0", "(8-12)", "-1.0", "1/2"]), "\(output)")
            #expect(table.contains(["p99_ms", "89.0", "(88-90)", "90.0", "(88-92)", "+1.0", "1/2"]), "\(output)")
        }
    }
}
