import Foundation

/// What a `push-load` run measured, and its outputs: the summary, a CSV of every matched push and
/// an SVG plot of latency over the run.
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
               let max = percentile(1, kind: kind) {
                lines.append(String(format: "%@ latency  p50 %.0f ms  p95 %.0f ms  p99 %.0f ms  max %.0f ms", label, p50, p95, p99, max))
            }
            if let missing = undelivered[kind], missing > 0 {
                lines.append("\(label): \(missing) not delivered within the drain time (coalesced or lost)")
            }
        }
        lines.append(errors.isEmpty ? "errors: none" : "errors: " + errors.sorted { $0.key < $1.key }.map { "\($0.key) × \($0.value)" }.joined(separator: ", "))
        return lines.joined(separator: "\n")
    }

    /// `kind,id,sent_s,delivered_s,latency_ms` with times relative to the start of traffic.
    func csv(since start: Double) -> String {
        var text = "kind,id,sent_s,delivered_s,latency_ms\n"
        for sample in samples.sorted(by: { $0.sentAt < $1.sentAt }) {
            text += String(format: "%@,%@,%.3f,%.3f,%.1f\n", sample.kind, sample.id, sample.sentAt - start, sample.deliveredAt - start, sample.latency * 1000)
        }
        return text
    }

    /// Latency (ms, log scale) against send time, one colour per kind, with p50/p99 lines.
    func svg(since start: Double) -> String {
        let width = 900.0, height = 420.0, left = 70.0, right = 20.0, top = 40.0, bottom = 50.0
        let plotWidth = width - left - right, plotHeight = height - top - bottom
        let maxTime = max(samples.map { $0.sentAt - start }.max() ?? 1, 1)
        let latencies = samples.map { max($0.latency * 1000, 1) }
        let maxLatency = max(latencies.max() ?? 10, 10)
        let logMax = log10(maxLatency * 1.2)
        func x(_ time: Double) -> Double { left + time / maxTime * plotWidth }
        func y(_ milliseconds: Double) -> Double { top + plotHeight - log10(max(milliseconds, 1)) / logMax * plotHeight }
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(left)" y="22" font-size="15">push-load: end-to-end latency (log scale) over the run</text>

            """
        var tick = 1.0
        while tick <= maxLatency * 1.2 {
            svg += "<line x1=\"\(left)\" x2=\"\(width - right)\" y1=\"\(y(tick))\" y2=\"\(y(tick))\" stroke=\"#ddd\"/>"
            svg += "<text x=\"\(left - 8)\" y=\"\(y(tick) + 4)\" text-anchor=\"end\">\(tick >= 1000 ? "\(Int(tick / 1000)) s" : "\(Int(tick)) ms")</text>\n"
            tick *= 10
        }
        for step in 0...5 {
            let time = maxTime * Double(step) / 5
            svg += "<text x=\"\(x(time))\" y=\"\(height - bottom + 18)\" text-anchor=\"middle\">\(String(format: "%.0f s", time))</text>\n"
        }
        svg += "<text x=\"\(left + plotWidth / 2)\" y=\"\(height - 10)\" text-anchor=\"middle\">time the request was sent</text>\n"
        let colours = ["wrap": "#d9480f", "push": "#1864ab"]
        for sample in samples {
            svg += String(format: "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.6\" fill=\"%@\" fill-opacity=\"0.6\"/>\n",
                          x(sample.sentAt - start), y(sample.latency * 1000), colours[sample.kind] ?? "#555")
        }
        var legendY = top + 6
        for kind in ["wrap", "push"] where (expected[kind] ?? 0) > 0 {
            let label = kind == "wrap" ? "gift wrap → relay → watcher → APNs" : "POST /v1/push → queue → APNs"
            var text = label
            if let p50 = percentile(0.5, kind: kind), let p99 = percentile(0.99, kind: kind) {
                text += String(format: "  (p50 %.0f ms, p99 %.0f ms)", p50, p99)
                for (value, dash) in [(p50, "4 3"), (p99, "1 3")] {
                    svg += "<line x1=\"\(left)\" x2=\"\(width - right)\" y1=\"\(y(value))\" y2=\"\(y(value))\" stroke=\"\(colours[kind]!)\" stroke-dasharray=\"\(dash)\"/>\n"
                }
            }
            svg += "<circle cx=\"\(left + 12)\" cy=\"\(legendY)\" r=\"4\" fill=\"\(colours[kind]!)\"/><text x=\"\(left + 22)\" y=\"\(legendY + 4)\">\(text)</text>\n"
            legendY += 16
        }
        svg += "<rect x=\"\(left)\" y=\"\(top)\" width=\"\(plotWidth)\" height=\"\(plotHeight)\" fill=\"none\" stroke=\"#333\"/>\n</svg>\n"
        return svg
    }
}
