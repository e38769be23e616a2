import Foundation

/// What a `push-load` run measured, and its outputs: the summary, a CSV of every matched push and
/// an SVG chart of throughput and latency over the run (`LoadChart`).
struct LoadReport {
    struct Sample {
        var kind: String
        var id: String
        /// Unix seconds.
        var sentAt: Double
        var deliveredAt: Double
        var latency: Double { deliveredAt - sentAt }
    }

    var registrationsPerSecond = 0.0
    var wrapsPerSecond = 0.0
    var pushRequestsPerSecond = 0.0
    var deliveredPerSecond = 0.0
    var samples: [Sample] = []
    var expected: [String: Int] = [:]
    var undelivered: [String: Int] = [:]
    /// Kind and send time (Unix seconds) of each request never delivered.
    var lost: [(kind: String, sentAt: Double)] = []
    var errors: [String: Int] = [:]

    mutating func merge(errors more: [String: Int]) {
        for (kind, count) in more { errors[kind, default: 0] += count }
    }

    /// p in 0...1 of the latencies of `kind` (all kinds when nil), in milliseconds.
    func percentile(_ p: Double, kind: String? = nil) -> Double? {
        let latencies = samples.filter { kind == nil || $0.kind == kind }.map(\.latency).sorted()
        guard !latencies.isEmpty else { return nil }
        return latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] * 1000
    }

    var summary: String {
        var lines = [
            String(format: "registrations/s      %.0f", registrationsPerSecond),
            String(format: "gift wraps/s         %.0f published (%d)", wrapsPerSecond, expected["wrap"] ?? 0),
            String(format: "typed pushes/s       %.0f accepted (%d)", pushRequestsPerSecond, expected["push"] ?? 0),
            String(format: "pushes delivered/s   %.0f (%d delivered to the sandbox)", deliveredPerSecond, samples.count),
        ]
        for kind in ["wrap", "push"] where (expected[kind] ?? 0) > 0 {
            let label = kind == "wrap" ? "relay → APNs" : "POST → APNs"
            if let p50 = percentile(0.5, kind: kind), let p95 = percentile(0.95, kind: kind), let p99 = percentile(0.99, kind: kind),
                let max = percentile(1, kind: kind)
            {
                lines.append(String(format: "%@ latency  p50 %.0f ms  p95 %.0f ms  p99 %.0f ms  max %.0f ms", label, p50, p95, p99, max))
            }
            if let missing = undelivered[kind], missing > 0 {
                lines.append("\(label): \(missing) not delivered within the drain time (coalesced or lost)")
            }
        }
        lines.append(
            errors.isEmpty
                ? "errors: none" : "errors: " + errors.sorted { $0.key < $1.key }.map { "\($0.key) × \($0.value)" }.joined(separator: ", "))
        return lines.joined(separator: "\n")
    }

    /// `kind,id,sent_s,delivered_s,latency_ms` with times relative to the start of traffic.
    func csv(since start: Double) -> String {
        var text = "kind,id,sent_s,delivered_s,latency_ms\n"
        for sample in samples.sorted(by: { $0.sentAt < $1.sentAt }) {
            text += String(
                format: "%@,%@,%.3f,%.3f,%.1f\n", sample.kind, sample.id, sample.sentAt - start, sample.deliveredAt - start,
                sample.latency * 1000)
        }
        return text
    }

    /// Throughput and latency over the run (`latency.svg`), times relative to `start`.
    func chart(since start: Double) -> LoadChart {
        let kinds = [
            LoadChart.Kind(id: "wrap", name: "gift wraps", path: "relay → watcher → queue → APNs", colour: "#d9480f"),
            LoadChart.Kind(id: "push", name: "typed pushes", path: "POST /v1/push → queue → APNs", colour: "#1864ab"),
        ].filter { kind in (expected[kind.id] ?? 0) > 0 || samples.contains { $0.kind == kind.id } }
        let requests =
            samples.map { LoadChart.Request(kind: $0.kind, sent: $0.sentAt - start, latency: $0.latency) }
            + lost.map { LoadChart.Request(kind: $0.kind, sent: $0.sentAt - start, latency: nil) }
        return LoadChart(title: "push-load: throughput and end-to-end latency", kinds: kinds, requests: requests)
    }

    func svg(since start: Double) -> String { chart(since: start).svg() }
}
