import AsyncHTTPClient
import Foundation
import LoadSupport
import NIOCore
import Synchronization

/// Sends prepared requests with a fixed number in flight and reports throughput and latency.
struct LoadRunner: Sendable {
    let baseURL: String
    let concurrency: Int
    let deadline: Int

    struct Run: Sendable {
        var count: Int
        var failures: [Int: Int]
        var seconds: Double
        var latenciesMilliseconds: [Double]
        /// When each request was sent, by index.
        var sentAt: [Date]

        func print(title: String, unit: String) {
            let sorted = latenciesMilliseconds.sorted()
            func percentile(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
            Swift.print("\(title): \(count) in \(String(format: "%.2f", seconds)) s = \(String(format: "%.0f", Double(count) / seconds)) \(unit)/s; "
                        + "latency ms p50 \(String(format: "%.1f", percentile(0.5))) p99 \(String(format: "%.1f", percentile(0.99)))"
                        + (failures.isEmpty ? "" : "; non-2xx: \(failures)"))
        }
    }

    func send(_ requests: [SignedRequest]) async throws -> Run {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: concurrency)
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let shared = Shared(count: requests.count)
        let limit = Date().addingTimeInterval(Double(deadline))
        let started = Date()
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<concurrency {
                    group.addTask {
                        while true {
                            let index = shared.next.add(1, ordering: .relaxed).oldValue
                            guard index < requests.count, Date() < limit else { return }
                            let prepared = requests[index]
                            var request = HTTPClientRequest(url: baseURL + prepared.path)
                            request.method = .RAW(value: prepared.method)
                            request.headers.add(name: "authorization", value: prepared.authorization)
                            request.headers.add(name: "content-type", value: "application/json")
                            request.body = .bytes(ByteBuffer(string: prepared.body))
                            let sent = Date()
                            let response = try await client.execute(request, timeout: .seconds(30))
                            _ = try await response.body.collect(upTo: 1 << 20)
                            let milliseconds = Date().timeIntervalSince(sent) * 1000
                            let status = Int(response.status.code)
                            shared.results.withLock { results in
                                results.latencies.append(milliseconds)
                                results.sentAt[index] = sent
                                if !(200..<300).contains(status) { results.failures[status, default: 0] += 1 }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
        } catch {
            try? await client.shutdown()
            throw error
        }
        let seconds = Date().timeIntervalSince(started)
        try await client.shutdown()
        let (latencies, failures, sentAt) = shared.results.withLock { $0 }
        return Run(count: latencies.count, failures: failures, seconds: seconds, latenciesMilliseconds: latencies, sentAt: sentAt)
    }

    /// State the sending tasks share: the next request index and what came back.
    final class Shared: Sendable {
        let next = Atomic<Int>(0)
        let results: Mutex<(latencies: [Double], failures: [Int: Int], sentAt: [Date])>
        init(count: Int) { results = Mutex(([], [:], [Date](repeating: .distantPast, count: count))) }
    }
}
