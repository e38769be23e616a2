import Foundation
import PushLoad
import TestSupport
import Testing

/// `push-load`'s chart (latency.svg), rendered by a real SVG renderer (`rsvg-convert`, Debian's
/// librsvg2-bin, which scripts/lib/setup.sh installs) and parsed by a real XML parser (Python's).
/// `LOAD_CHART_OUT=DIR` keeps the SVGs and PNGs there, to look at.
struct LoadChartTests {
    static let kinds = [
        LoadChart.Kind(id: "wrap", name: "gift wraps", path: "relay → watcher → queue → APNs", colour: "#d9480f"),
        LoadChart.Kind(id: "push", name: "typed pushes", path: "POST /v1/push → queue → APNs", colour: "#1864ab"),
    ]

    /// The same numbers on every run (a linear congruential generator), in 0..<1.
    struct Numbers {
        var state: UInt64
        mutating func next() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(state >> 11) / Double(1 << 53)
        }
    }

    /// `rate` requests per second of each kind for `seconds`, latencies log-normal-ish around
    /// `typical` seconds with a slow patch in the middle; every `lostEvery`th never delivered.
    static func run(seconds: Double, rate: Double, typical: Double = 0.02, lostEvery: Int = 0) -> [LoadChart.Request] {
        var numbers = Numbers(state: 42)
        var requests: [LoadChart.Request] = []
        let count = Int(seconds * rate)
        for index in 0..<count {
            for (kind, scale) in [("wrap", 2.0), ("push", 1.0)] {
                let sent = Double(index) / rate + numbers.next() / rate
                let slow = abs(sent - seconds / 2) < seconds / 20 ? 8.0 : 1.0
                let latency = typical * scale * slow * exp(numbers.next() * numbers.next() * 3)
                let lost = lostEvery > 0 && (index * 2 + (kind == "wrap" ? 0 : 1)) % lostEvery == 0
                requests.append(.init(kind: kind, sent: sent, latency: lost ? nil : latency))
            }
        }
        return requests
    }

    @Test func aTypicalRunHasBothPanelsAxesUnitsAndALegend() async throws {
        let chart = LoadChart(
            title: "push-load: throughput and end-to-end latency", kinds: Self.kinds,
            requests: Self.run(seconds: 10, rate: 100, lostEvery: 500))
        let rendered = try await Self.render(chart, name: "typical")
        for text in [
            "push-load: throughput and end-to-end latency", "2,000 requests sent, 1,996 delivered, 4 not delivered · lines are per second",
            "Throughput: requests sent (at send time) and delivered (at delivery time), per second",
            "End-to-end latency, by the time the request was sent",
            "time since start (s)", "requests/s", "latency (log scale)",
            "gift wraps", "typed pushes", "relay → watcher → queue → APNs", "POST /v1/push → queue → APNs",
            "gift wraps sent/s", "gift wraps delivered/s", "typed pushes sent/s", "typed pushes delivered/s",
            "each request", "not delivered (4)", "0", "10", "100 ms", "1 s",
        ] {
            #expect(rendered.texts.contains(text), "\(text) in \(rendered.texts)")
        }
        #expect(rendered.texts.contains { $0.hasPrefix("p50 per second (whole run ") && $0.hasSuffix(" ms)") })
        #expect(rendered.texts.contains { $0.hasPrefix("p99 per second (whole run ") })
        // Every delivered request is a dot.
        #expect(rendered.circles == 1_996 + 2, "a dot per delivered request, and a legend swatch per kind")
        #expect(chart.svg() == chart.svg(), "a pure value: the same bytes every time")
    }

    enum EdgeCase: String, CaseIterable, Sendable {
        case noRequests, oneRequest, allLatenciesEqual, nothingDelivered, oddNumbers, unknownKindAndMarkupInText, subSecondRun, slowTail
    }

    static func chart(_ edge: EdgeCase) -> LoadChart {
        switch edge {
        case .noRequests:
            return LoadChart(title: "empty", kinds: kinds, requests: [])
        case .oneRequest:
            return LoadChart(title: "one", kinds: kinds, requests: [.init(kind: "push", sent: 0.3, latency: 0.012)])
        case .allLatenciesEqual:
            return LoadChart(
                title: "flat", kinds: kinds,
                requests: (0..<300).map { .init(kind: $0 % 2 == 0 ? "wrap" : "push", sent: Double($0) / 100, latency: 0.05) })
        case .nothingDelivered:
            return LoadChart(
                title: "lost", kinds: kinds, requests: (0..<50).map { .init(kind: "wrap", sent: Double($0) / 10, latency: nil) })
        case .oddNumbers:
            return LoadChart(
                title: "odd", kinds: kinds,
                requests: [
                    .init(kind: "wrap", sent: .nan, latency: 0.01), .init(kind: "wrap", sent: 1, latency: .infinity),
                    .init(kind: "wrap", sent: -2, latency: -0.5), .init(kind: "push", sent: 2, latency: 0),
                    .init(kind: "push", sent: 3, latency: 0.000_01), .init(kind: "push", sent: 4, latency: 45),
                ])
        case .unknownKindAndMarkupInText:
            return LoadChart(
                title: #"<script>alert("x")</script> & 'more' \#u{7}"#,
                kinds: [.init(id: "a", name: "<b>a & b</b>", path: "x \"→\" y", colour: #""><g"#)],
                requests: [.init(kind: "a", sent: 0.5, latency: 0.2), .init(kind: "</text>", sent: 1.5, latency: 0.4)])
        case .subSecondRun:
            return LoadChart(
                title: "short", kinds: kinds,
                requests: (0..<20).map { .init(kind: "push", sent: Double($0) / 40, latency: 0.003 + Double($0) / 10_000) })
        case .slowTail:
            return LoadChart(title: "tail", kinds: kinds, requests: run(seconds: 5, rate: 20, typical: 0.2))
        }
    }

    @Test(arguments: EdgeCase.allCases) func edgeCasesRenderAndKeepTheirAxes(_ edge: EdgeCase) async throws {
        let rendered = try await Self.render(Self.chart(edge), name: edge.rawValue)
        for text in ["time since start (s)", "requests/s", "latency (log scale)"] {
            #expect(rendered.texts.contains(text), "\(edge): \(text)")
        }
        #expect(rendered.texts.contains { $0.hasSuffix(" ms") || $0.hasSuffix(" s") }, "latency ticks carry their unit")
        switch edge {
        case .noRequests:
            #expect(rendered.texts.filter { $0 == "no requests" }.count == 2)
        case .nothingDelivered:
            #expect(rendered.texts.contains("no request was delivered") && rendered.texts.contains("not delivered (50)"))
        case .oddNumbers:
            #expect(
                rendered.texts.contains { $0.hasPrefix("4 requests sent, 4 delivered ·") },
                "the NaN and the infinity left out: \(rendered.texts)")
            #expect(rendered.texts.contains("10 s"), "45 s fits under the axis's top")
        case .unknownKindAndMarkupInText:
            #expect(rendered.texts.contains(#"<script>alert("x")</script> & 'more' �"#))
            #expect(rendered.texts.contains("<b>a & b</b>") && rendered.texts.contains("</text>"))
            #expect(!rendered.svg.contains("<script>") && !rendered.svg.contains("<b>"))
        case .allLatenciesEqual:
            #expect(rendered.texts.contains("10 ms") && rendered.texts.contains("100 ms"), "a decade around 50 ms")
        case .oneRequest, .subSecondRun, .slowTail:
            break
        }
    }

    /// 100,000 requests over ten minutes: the dots are merged where they overlap, the file stays
    /// well under a megabyte, and the outliers still show.
    @Test func aLongRunStaysSmall() async throws {
        let chart = LoadChart(title: "long", kinds: Self.kinds, requests: Self.run(seconds: 600, rate: 84, lostEvery: 10_000))
        #expect(chart.requests.count == 100_800)
        let rendered = try await Self.render(chart, name: "long")
        #expect(rendered.svg.utf8.count < 1_000_000, "\(rendered.svg.utf8.count) bytes")
        #expect(rendered.circles <= LoadChart.maxDots + 2)
        #expect(rendered.texts.contains("requests (overlapping dots merged)"))
    }

    // MARK: Rendering

    struct Rendered {
        var svg: String
        /// The text of every `<text>`, as an XML parser reads it (entities resolved).
        var texts: [String]
        var circles: Int
    }

    static func render(_ chart: LoadChart, name: String) async throws -> Rendered {
        let directory: String
        if let keep = ProcessInfo.processInfo.environment["LOAD_CHART_OUT"], !keep.isEmpty {
            directory = keep
        } else {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("load-chart-\(UUID().uuidString)").path
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { if ProcessInfo.processInfo.environment["LOAD_CHART_OUT"] == nil { try? FileManager.default.removeItem(atPath: directory) } }
        let svg = chart.svg()
        let path = directory + "/\(name).svg"
        try svg.write(toFile: path, atomically: true, encoding: .utf8)
        let (width, height) = try await renderPNG(path)
        #expect(width == LoadChart.width && height == LoadChart.height, "the PNG is the SVG's size")
        let parsed = try await parse(path)
        #expect(parsed.width == LoadChart.width && parsed.height == LoadChart.height)
        return Rendered(svg: svg, texts: parsed.texts, circles: parsed.circles)
    }

    /// Renders `svgPath` to a PNG beside it with `rsvg-convert`, which fails on XML it cannot
    /// parse, and returns the PNG's size from its IHDR chunk.
    static func renderPNG(_ svgPath: String) async throws -> (width: Int, height: Int) {
        let png = (svgPath as NSString).deletingPathExtension + ".png"
        let (code, output) = try await ChildProcess.run(try rsvgConvert(), ["-o", png, svgPath])
        #expect(code == 0, "rsvg-convert \(svgPath): \(output)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: png)))
        try #require(bytes.count > 24, "\(png) is \(bytes.count) bytes")
        #expect(Array(bytes[0..<8]) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], "PNG signature")
        #expect(Array(bytes[12..<16]) == Array("IHDR".utf8), "IHDR first")
        let word = { (at: Int) in bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        return (word(16), word(20))
    }

    static func rsvgConvert() throws -> String {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
            .map { "\($0)/rsvg-convert" }.first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let path else { throw FixtureError("rsvg-convert not found: install librsvg2-bin (scripts/lib/setup.sh does)") }
        return path
    }

    /// Parses `svgPath` with Python's XML parser: the root's size, every `<text>`'s text, and the
    /// number of `<circle>`s.
    static func parse(_ svgPath: String) async throws -> (width: Int, height: Int, texts: [String], circles: Int) {
        let script = """
            from json import dumps
            from sys import argv
            from xml.etree import ElementTree
            svg = "{http://www.w3.org/2000/svg}"
            root = ElementTree.parse(argv[1]).getroot()
            assert root.tag == svg + "svg", root.tag
            print(dumps({"width": int(root.get("width")), "height": int(root.get("height")),
                              "texts": ["".join(e.itertext()) for e in root.iter(svg + "text")],
                              "circles": sum(1 for _ in root.iter(svg + "circle"))}))
            """
        let (code, output) = try await ChildProcess.run(RustNostrPeer.python, ["-c", script, svgPath])
        try #require(code == 0, "the SVG is not well-formed XML: \(output)")
        struct Parsed: Decodable {
            var width: Int, height: Int, texts: [String], circles: Int
        }
        let parsed = try JSONDecoder().decode(Parsed.self, from: Data(output.utf8))
        return (parsed.width, parsed.height, parsed.texts, parsed.circles)
    }
}
