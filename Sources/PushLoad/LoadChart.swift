import Foundation

/// The chart `push-load` writes as `latency.svg`: two panels over one time axis (seconds since
/// traffic started).
///
/// - Throughput: per bucket (1 s; longer only past 1,500 s), the requests of each kind sent and
///   delivered per second, as step lines.
/// - Latency (log scale, ms or s): one dot per delivered request at the time it was sent, and the
///   p50 and p99 of each bucket as lines; requests never delivered are crosses along the top.
///
/// A pure value: the same requests give the same bytes. Text is XML-escaped; the only font asked
/// for is `sans-serif`. Past `maxDots` dots, overlapping dots are merged on a pixel grid (outliers
/// stay), so 100,000 requests still make a file of a few hundred kB.
public struct LoadChart: Sendable, Equatable {
    /// A kind of request, as the chart names and colours it.
    public struct Kind: Sendable, Equatable {
        public var id: String
        /// Plural, short: "gift wraps".
        public var name: String
        /// What its latency spans: "relay → watcher → queue → APNs".
        public var path: String
        /// An SVG colour.
        public var colour: String

        public init(id: String, name: String, path: String = "", colour: String) {
            self.id = id
            self.name = name
            self.path = path
            self.colour = colour
        }
    }

    public struct Request: Sendable, Equatable {
        public var kind: String
        /// Seconds since the start of traffic.
        public var sent: Double
        /// Seconds from sent to delivered; nil when it was never delivered.
        public var latency: Double?

        public init(kind: String, sent: Double, latency: Double?) {
            self.kind = kind
            self.sent = sent
            self.latency = latency
        }
    }

    public var title: String
    public var kinds: [Kind]
    public var requests: [Request]

    public static let width = 1120
    public static let height = 640
    /// Dots drawn at most before overlapping ones are merged.
    public static let maxDots = 4000

    /// `kinds` in legend order; a kind only `requests` name is drawn with a colour of its own.
    public init(title: String, kinds: [Kind], requests: [Request]) {
        self.title = title
        self.kinds = kinds
        self.requests = requests
    }

    static let palette = ["#d9480f", "#1864ab", "#2b8a3e", "#862e9c", "#e67700", "#0b7285"]

    public func svg() -> String {
        Renderer(self).render()
    }
}

// MARK: - Rendering

private struct Renderer {
    // Layout, in SVG user units (= pixels at 1:1).
    let width = Double(LoadChart.width), height = Double(LoadChart.height)
    let plotLeft = 84.0, plotRight = 800.0, legendX = 826.0
    let throughputTop = 96.0, throughputBottom = 262.0
    let latencyTop = 318.0, latencyBottom = 578.0
    var plotWidth: Double { plotRight - plotLeft }

    let chart: LoadChart
    let kinds: [LoadChart.Kind]
    /// Requests with finite numbers; negative times and latencies count as zero.
    let requests: [LoadChart.Request]
    let bucket: Double
    let end: Double
    let buckets: Int
    let logLow: Double, logHigh: Double

    init(_ chart: LoadChart) {
        self.chart = chart
        var kinds = chart.kinds
        for request in chart.requests where !kinds.contains(where: { $0.id == request.kind }) {
            kinds.append(.init(id: request.kind, name: request.kind, colour: ""))
        }
        // A colour that is not `#rgb`, `#rrggbb` or a plain name becomes one of the palette's.
        for index in kinds.indices {
            let colour = kinds[index].colour
            let hex = colour.hasPrefix("#") && [4, 7].contains(colour.count) && colour.dropFirst().allSatisfy(\.isHexDigit)
            let named = (1...20).contains(colour.count) && colour.allSatisfy { $0.isASCII && $0.isLetter }
            if !hex && !named { kinds[index].colour = LoadChart.palette[index % LoadChart.palette.count] }
        }
        self.kinds = kinds
        requests = chart.requests.compactMap { request in
            guard request.sent.isFinite, request.latency?.isFinite ?? true else { return nil }
            return LoadChart.Request(kind: request.kind, sent: max(request.sent, 0), latency: request.latency.map { max($0, 0) })
        }
        let last = requests.map { $0.sent + ($0.latency ?? 0) }.max() ?? 0
        // 1-s buckets, wider only to keep a very long run under 1,500 of them.
        bucket = last > 1_500 ? Renderer.niceStep(last / 1_500) : 1
        buckets = max(1, Int((last / bucket).rounded(.up)))
        end = Double(buckets) * bucket
        let latencies = requests.compactMap(\.latency).map(Renderer.milliseconds)
        if let low = latencies.min(), let high = latencies.max() {
            logLow = max((log10(low) - 0.02).rounded(.down), -1)
            logHigh = max((log10(high) + 0.06).rounded(.up), logLow + 1)
        } else {
            (logLow, logHigh) = (0, 3)
        }
    }

    /// Latency in ms for the log axis (nothing below 0.1 ms).
    static func milliseconds(_ seconds: Double) -> Double { max(seconds * 1000, 0.1) }

    func x(_ time: Double) -> Double { plotLeft + min(max(time, 0), end) / end * plotWidth }
    func bucketIndex(_ time: Double) -> Int { min(max(Int(time / bucket), 0), buckets - 1) }

    func yLatency(_ milliseconds: Double) -> Double {
        let fraction = (log10(milliseconds) - logLow) / (logHigh - logLow)
        return latencyBottom - min(max(fraction, 0), 1) * (latencyBottom - latencyTop)
    }

    func render() -> String {
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(LoadChart.width)" height="\(LoadChart.height)" \
            viewBox="0 0 \(LoadChart.width) \(LoadChart.height)" font-family="sans-serif" font-size="12" fill="#222">
            <title>\(escape(chart.title))</title>
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(plotLeft)" y="30" font-size="18" font-weight="bold">\(escape(chart.title))</text>
            <text x="\(plotLeft)" y="52" fill="#555">\(escape(subtitle))</text>

            """
        svg += timeAxis()
        svg += throughputPanel()
        svg += latencyPanel()
        svg += "</svg>\n"
        return svg
    }

    var bucketWords: String { bucket == 1 ? "second" : "\(Renderer.number(bucket)) s" }

    var subtitle: String {
        let delivered = requests.filter { $0.latency != nil }.count
        var parts = [
            "\(Renderer.grouped(requests.count)) request\(requests.count == 1 ? "" : "s") sent", "\(Renderer.grouped(delivered)) delivered",
        ]
        if delivered < requests.count { parts.append("\(Renderer.grouped(requests.count - delivered)) not delivered") }
        return parts.joined(separator: ", ") + " · lines are per \(bucketWords)"
    }

    // MARK: Axes

    /// Vertical grid lines through both panels, tick labels under the latency panel, axis title.
    func timeAxis() -> String {
        var svg = ""
        let step = Renderer.niceStep(end / 8)
        var tick = 0.0
        while tick <= end + step * 1e-9 {
            let position = f(x(tick))
            for (top, bottom) in [(throughputTop, throughputBottom), (latencyTop, latencyBottom)] {
                svg += "<line x1=\"\(position)\" x2=\"\(position)\" y1=\"\(f(top))\" y2=\"\(f(bottom))\" stroke=\"#e6e6e6\"/>\n"
            }
            for bottom in [throughputBottom, latencyBottom] {
                svg += "<line x1=\"\(position)\" x2=\"\(position)\" y1=\"\(f(bottom))\" y2=\"\(f(bottom + 5))\" stroke=\"#333\"/>\n"
            }
            svg +=
                "<text x=\"\(position)\" y=\"\(f(latencyBottom + 20))\" text-anchor=\"middle\" fill=\"#444\">\(Renderer.number(tick))</text>\n"
            tick += step
        }
        svg +=
            "<text x=\"\(f(plotLeft + plotWidth / 2))\" y=\"\(f(latencyBottom + 46))\" text-anchor=\"middle\" font-size=\"13\">time since start (s)</text>\n"
        return svg
    }

    func panelFrame(top: Double, bottom: Double, heading: String, axisTitle: String) -> String {
        let middle = (top + bottom) / 2
        return """
            <text x="\(plotLeft)" y="\(f(top - 10))" font-size="14" font-weight="bold">\(escape(heading))</text>
            <text transform="translate(22 \(f(middle))) rotate(-90)" text-anchor="middle" font-size="13">\(escape(axisTitle))</text>
            <rect x="\(plotLeft)" y="\(f(top))" width="\(f(plotWidth))" height="\(f(bottom - top))" fill="none" stroke="#333"/>

            """
    }

    func yTick(_ y: Double, label: String, major: Bool = true) -> String {
        var svg =
            "<line x1=\"\(plotLeft)\" x2=\"\(plotRight)\" y1=\"\(f(y))\" y2=\"\(f(y))\" stroke=\"\(major ? "#e0e0e0" : "#f2f2f2")\"/>\n"
        if major {
            svg += "<line x1=\"\(f(plotLeft - 5))\" x2=\"\(plotLeft)\" y1=\"\(f(y))\" y2=\"\(f(y))\" stroke=\"#333\"/>"
            svg += "<text x=\"\(f(plotLeft - 8))\" y=\"\(f(y + 4))\" text-anchor=\"end\" fill=\"#444\">\(escape(label))</text>\n"
        }
        return svg
    }

    func emptyNote(_ text: String, top: Double, bottom: Double) -> String {
        "<text x=\"\(f(plotLeft + plotWidth / 2))\" y=\"\(f((top + bottom) / 2))\" text-anchor=\"middle\" fill=\"#888\" font-size=\"14\">\(escape(text))</text>\n"
    }

    // MARK: Throughput

    func throughputPanel() -> String {
        var sent: [String: [Int]] = [:], delivered: [String: [Int]] = [:]
        for kind in kinds {
            sent[kind.id] = Array(repeating: 0, count: buckets)
            delivered[kind.id] = Array(repeating: 0, count: buckets)
        }
        for request in requests {
            sent[request.kind]![bucketIndex(request.sent)] += 1
            if let latency = request.latency { delivered[request.kind]![bucketIndex(request.sent + latency)] += 1 }
        }
        let highest = Double(kinds.flatMap { sent[$0.id]! + delivered[$0.id]! }.max() ?? 0) / bucket
        let step = max(Renderer.niceStep(max(highest, 1) / 4), bucket == 1 ? 1 : 0)
        let top = max((highest * 1.08 / step).rounded(.up), 1) * step
        func y(_ rate: Double) -> Double { throughputBottom - rate / top * (throughputBottom - throughputTop) }

        var svg = ""
        var tick = 0.0
        while tick <= top + step * 1e-9 {
            svg += yTick(y(tick), label: Renderer.number(tick))
            tick += step
        }
        if requests.isEmpty { svg += emptyNote("no requests", top: throughputTop, bottom: throughputBottom) }
        var legend: [LegendEntry] = []
        for kind in kinds {
            for (counts, dash, label) in [(sent[kind.id]!, "6 4", "sent/s"), (delivered[kind.id]!, nil, "delivered/s")] {
                var path = ""
                for (index, count) in counts.enumerated() {
                    let level = f(y(Double(count) / bucket))
                    path += index == 0 ? "M\(f(x(0))) \(level)" : "V\(level)"
                    path += "H\(f(x(Double(index + 1) * bucket)))"
                }
                if !requests.isEmpty {
                    svg +=
                        "<path d=\"\(path)\" fill=\"none\" stroke=\"\(escape(kind.colour))\" stroke-width=\"\(dash == nil ? 2 : 1.5)\"\(dash.map { " stroke-dasharray=\"\($0)\"" } ?? "") stroke-linejoin=\"round\"/>\n"
                }
                legend.append(
                    .init(swatch: .line(colour: kind.colour, dash: dash, width: dash == nil ? 2 : 1.5), text: "\(kind.name) \(label)"))
            }
        }
        svg += panelFrame(
            top: throughputTop, bottom: throughputBottom,
            heading: "Throughput: requests sent (at send time) and delivered (at delivery time), per \(bucketWords)",
            axisTitle: "requests/s")
        svg += self.legend(legend, top: throughputTop)
        return svg
    }

    // MARK: Latency

    func latencyPanel() -> String {
        var svg = latencyTicks()
        let delivered = requests.filter { $0.latency != nil }
        if delivered.isEmpty {
            svg += emptyNote(requests.isEmpty ? "no requests" : "no request was delivered", top: latencyTop, bottom: latencyBottom)
        }
        let (dots, cell) = latencyDots(delivered)
        // A few dots go over the lines (each one matters), many under them (the lines summarise).
        let few = delivered.count <= 400
        var dotLayer = ""
        for kind in kinds {
            let mine = dots.filter { $0.kind == kind.id }
            guard !mine.isEmpty else { continue }
            dotLayer += "<g fill=\"\(escape(kind.colour))\" fill-opacity=\"\(few ? 0.75 : 0.4)\">\n"
            for dot in mine { dotLayer += "<circle cx=\"\(f(dot.x))\" cy=\"\(f(dot.y))\" r=\"\(few ? 2.8 : 1.8)\"/>\n" }
            dotLayer += "</g>\n"
        }
        // White halos under every line first, so no line's halo hides another line.
        var halos = "", lines = "", crosses = ""

        var legend: [LegendEntry] = []
        for kind in kinds {
            let mine = requests.filter { $0.kind == kind.id }
            legend.append(.init(swatch: .none, text: kind.name, colour: kind.colour, bold: true))
            if !kind.path.isEmpty { legend.append(.init(swatch: .none, text: kind.path, colour: "#666")) }
            legend.append(.init(swatch: .dot(colour: kind.colour), text: cell > 0 ? "requests (overlapping dots merged)" : "each request"))
            legend += percentileLines(of: mine, kind: kind, halos: &halos, lines: &lines)
            let lost = mine.filter { $0.latency == nil }
            if !lost.isEmpty {
                crosses += lostCrosses(lost, colour: kind.colour)
                legend.append(.init(swatch: .cross(colour: kind.colour), text: "not delivered (\(Renderer.grouped(lost.count)))"))
            }
            legend.append(.init(swatch: .gap, text: ""))
        }
        svg += few ? halos + lines + dotLayer + crosses : dotLayer + halos + lines + crosses
        svg += panelFrame(
            top: latencyTop, bottom: latencyBottom, heading: "End-to-end latency, by the time the request was sent",
            axisTitle: "latency (log scale)")
        svg += self.legend(legend, top: latencyTop)
        return svg
    }

    /// 1-2-5 over up to two decades, decades with unlabelled minor lines past that.
    func latencyTicks() -> String {
        var svg = ""
        let decades = Int(logHigh - logLow)
        for exponent in Int(logLow)...Int(logHigh) {
            let decade = pow(10, Double(exponent))
            for multiple in 1...9 {
                let value = decade * Double(multiple)
                guard log10(value) <= logHigh + 1e-9 else { break }
                let labelled = multiple == 1 || (decades <= 2 && (multiple == 2 || multiple == 5))
                if labelled || decades <= 4 { svg += yTick(yLatency(value), label: Renderer.latencyLabel(value), major: labelled) }
            }
        }
        return svg
    }

    /// All the dots, or past `maxDots` one per occupied grid cell; `cell` is that grid's size (0: not merged).
    func latencyDots(_ delivered: [LoadChart.Request]) -> (dots: [(kind: String, x: Double, y: Double)], cell: Double) {
        var cell = 0.0
        var dots: [(kind: String, x: Double, y: Double)] = delivered.map {
            ($0.kind, x($0.sent), yLatency(Renderer.milliseconds($0.latency!)))
        }
        if dots.count > LoadChart.maxDots {
            let kindIndex = Dictionary(kinds.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
            for size in [1.5, 2, 3, 4, 6, 8, 12, 16] {
                var seen = Set<Int>()
                let merged = dots.filter { seen.insert(kindIndex[$0.kind]! << 40 | Int($0.x / size) << 20 | Int($0.y / size)).inserted }
                cell = size
                if merged.count <= LoadChart.maxDots || size == 16 {
                    dots = merged
                    break
                }
            }
        }
        return (dots, cell)
    }

    /// The p50 and p99 of each bucket, by send time, with a gap where a bucket has none: their
    /// paths appended to `halos` and `lines`, their legend entries returned.
    func percentileLines(of mine: [LoadChart.Request], kind: LoadChart.Kind, halos: inout String, lines: inout String) -> [LegendEntry] {
        let latencies = mine.compactMap(\.latency).map(Renderer.milliseconds)
        var byBucket = Array(repeating: [Double](), count: buckets)
        for request in mine {
            if let latency = request.latency { byBucket[bucketIndex(request.sent)].append(Renderer.milliseconds(latency)) }
        }
        for index in byBucket.indices { byBucket[index].sort() }
        var legend: [LegendEntry] = []
        for (p, dash, name) in [(0.5, nil, "p50"), (0.99, "5 3", "p99")] {
            var points: [[(Double, Double)]] = [[]]
            for (index, values) in byBucket.enumerated() {
                guard !values.isEmpty else {
                    if !points[points.count - 1].isEmpty { points.append([]) }
                    continue
                }
                let value = Renderer.percentile(p, of: values)
                points[points.count - 1].append((x((Double(index) + 0.5) * bucket), yLatency(value)))
            }
            for run in points where !run.isEmpty {
                // A lone bucket is drawn across its width, so it shows.
                let line =
                    run.count == 1
                    ? [(run[0].0 - plotWidth / Double(buckets) * 0.4, run[0].1), (run[0].0 + plotWidth / Double(buckets) * 0.4, run[0].1)]
                    : run
                let d = line.enumerated().map { "\($0.offset == 0 ? "M" : "L")\(f($0.element.0)) \(f($0.element.1))" }.joined()
                let dashing = dash.map { " stroke-dasharray=\"\($0)\"" } ?? ""
                halos +=
                    "<path d=\"\(d)\" fill=\"none\" stroke=\"white\" stroke-opacity=\"0.8\" stroke-width=\"5\" stroke-linejoin=\"round\"/>\n"
                lines +=
                    "<path d=\"\(d)\" fill=\"none\" stroke=\"\(escape(kind.colour))\" stroke-width=\"2\"\(dashing) stroke-linejoin=\"round\"/>\n"
            }
            let overall = latencies.isEmpty ? "" : " (whole run \(Renderer.latencyText(Renderer.percentile(p, of: latencies.sorted()))))"
            legend.append(.init(swatch: .line(colour: kind.colour, dash: dash, width: 2), text: "\(name) per \(bucketWords)\(overall)"))
        }
        return legend
    }

    /// A cross along the top per lost request, at most one per 2-unit column.
    func lostCrosses(_ lost: [LoadChart.Request], colour: String) -> String {
        var columns = Set<Int>()
        var d = ""
        for request in lost where columns.insert(Int(x(request.sent) / 2)).inserted {
            d += "M\(f(x(request.sent) - 3.5)) \(f(latencyTop + 5))l7 7m0 -7l-7 7"
        }
        return "<path d=\"\(d)\" stroke=\"\(escape(colour))\" stroke-width=\"1.6\"/>\n"
    }

    static func percentile(_ p: Double, of sorted: [Double]) -> Double {
        sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    // MARK: Legend

    struct LegendEntry {
        enum Swatch {
            case none, gap
            case line(colour: String, dash: String?, width: Double)
            case dot(colour: String)
            case cross(colour: String)
        }
        var swatch: Swatch
        var text: String
        var colour = "#222"
        var bold = false
    }

    func legend(_ entries: [LegendEntry], top: Double) -> String {
        var svg = ""
        var y = top + 10
        let textX = legendX + 34
        for entry in entries {
            switch entry.swatch {
            case .gap:
                y += 6
                continue
            case .none:
                break
            case .line(let colour, let dash, let width):
                svg +=
                    "<line x1=\"\(f(legendX))\" x2=\"\(f(legendX + 26))\" y1=\"\(f(y - 4))\" y2=\"\(f(y - 4))\" stroke=\"\(escape(colour))\" stroke-width=\"\(width)\"\(dash.map { " stroke-dasharray=\"\($0)\"" } ?? "")/>"
            case .dot(let colour):
                svg += "<circle cx=\"\(f(legendX + 13))\" cy=\"\(f(y - 4))\" r=\"3.5\" fill=\"\(escape(colour))\" fill-opacity=\"0.7\"/>"
            case .cross(let colour):
                svg += "<path d=\"M\(f(legendX + 9.5)) \(f(y - 7.5))l7 7m0 -7l-7 7\" stroke=\"\(escape(colour))\" stroke-width=\"1.6\"/>"
            }
            let x = if case .none = entry.swatch { legendX } else { textX }
            svg +=
                "<text x=\"\(f(x))\" y=\"\(f(y))\" fill=\"\(escape(entry.colour))\"\(entry.bold ? " font-weight=\"bold\" font-size=\"13\"" : "")>\(escape(entry.text))</text>\n"
            y += 18
        }
        return svg
    }

    // MARK: Text

    func f(_ value: Double) -> String { String(format: "%.1f", value) }

    /// XML text or attribute value: the five markup characters escaped, and the control
    /// characters XML 1.0 cannot carry replaced.
    func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || (0xFFFE...0xFFFF).contains(scalar.value): out += "\u{FFFD}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// 1, 2 or 5 times a power of ten, at least `raw`.
    static func niceStep(_ raw: Double) -> Double {
        guard raw > 0, raw.isFinite else { return 1 }
        let power = pow(10, log10(raw).rounded(.down))
        for multiple in [1.0, 2, 5, 10] where multiple * power >= raw * (1 - 1e-9) { return multiple * power }
        return 10 * power
    }

    /// An axis number: whole numbers grouped by thousands, others with one or two decimals.
    static func number(_ value: Double) -> String {
        if abs(value - value.rounded()) < 1e-6 { return grouped(Int(value.rounded())) }
        return abs(value * 10 - (value * 10).rounded()) < 1e-6 ? String(format: "%.1f", value) : String(format: "%.2f", value)
    }

    static func grouped(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { out += "," }
            out.append(digit)
        }
        return (value < 0 ? "-" : "") + out
    }

    /// A tick on the latency axis: "0.5 ms", "20 ms", "1 s".
    static func latencyLabel(_ milliseconds: Double) -> String {
        milliseconds >= 1000 ? "\(number(milliseconds / 1000)) s" : "\(number(milliseconds)) ms"
    }

    /// A measured latency: "0.8 ms", "73 ms", "1.25 s", "21.4 s".
    static func latencyText(_ milliseconds: Double) -> String {
        switch milliseconds {
        case ..<10: String(format: "%.1f ms", milliseconds)
        case ..<1000: String(format: "%.0f ms", milliseconds)
        case ..<10_000: String(format: "%.2f s", milliseconds / 1000)
        default: String(format: "%.1f s", milliseconds / 1000)
        }
    }
}
