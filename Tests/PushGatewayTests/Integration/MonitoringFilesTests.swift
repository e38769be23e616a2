import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NostrProtocol
import PushGateway
import TestSupport
import Testing

/// The monitoring that ships in deploy/: the alerting rules pass promtool's check and their unit
/// tests (deploy/prometheus/alerts.test.yaml), each alert has a runbook section in
/// docs/operations.md, every dashboard query parses, and every `linkstr_…` metric the rules and the
/// dashboard read is one a running gateway exports.
@Suite(.serialized) struct MonitoringFilesTests {
    static let root = RustNostrPeer.repositoryRoot
    static let rules = root.appendingPathComponent("deploy/prometheus/alerts.yaml")
    static let ruleTests = root.appendingPathComponent("deploy/prometheus/alerts.test.yaml")
    static let dashboard = root.appendingPathComponent("deploy/grafana/linkstr-push.json")
    static let operations = root.appendingPathComponent("docs/operations.md")

    /// promtool, from Debian's `prometheus` package (scripts/lib/setup.sh installs it).
    static func promtool() throws -> String {
        let path =
            (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/bin", "/usr/local/bin"]
        for directory in path {
            let candidate = URL(fileURLWithPath: directory).appendingPathComponent("promtool").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw FixtureError("promtool not found on PATH: install Debian's `prometheus` package (scripts/lib/setup.sh installs it)")
    }

    /// A YAML file as JSON, read by the PyYAML of the tests' virtualenv (scripts/lint_deploy.py uses it too).
    static func yaml(_ file: URL) async throws -> [String: Any] {
        let (code, output) = try await ChildProcess.run(
            RustNostrPeer.python, ["-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))", file.path])
        guard code == 0, let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any] else {
            throw FixtureError("could not read \(file.path) as YAML: \(output)")
        }
        return object
    }

    /// The alerting rules of every group.
    static func alertingRules() async throws -> [[String: Any]] {
        let groups = try await yaml(rules)["groups"] as? [[String: Any]] ?? []
        return groups.flatMap { $0["rules"] as? [[String: Any]] ?? [] }
    }

    static func dashboardJSON() throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(contentsOf: dashboard)) as? [String: Any] ?? [:]
    }

    /// Every panel of the dashboard, those inside collapsed rows included.
    static func panels(_ dashboard: [String: Any]) -> [[String: Any]] {
        let top = dashboard["panels"] as? [[String: Any]] ?? []
        return top + top.flatMap { $0["panels"] as? [[String: Any]] ?? [] }
    }

    /// Every query of the dashboard, with Grafana's variables replaced by what PromQL accepts.
    static func dashboardQueries() throws -> [String] {
        let expressions = panels(try dashboardJSON()).flatMap { $0["targets"] as? [[String: Any]] ?? [] }.compactMap {
            $0["expr"] as? String
        }
        return expressions.map { expression in
            expression
                .replacing(/\$\{?__(rate_interval|interval|range)\}?/, with: "5m")
                .replacing(/\$\{?[A-Za-z_][A-Za-z0-9_]*(:[a-z]+)?\}?/, with: ".*")
        }
    }

    /// The `linkstr_…` metric names in `expressions`: identifiers that start so (a recording
    /// rule's name, `a:linkstr_b`, is not one; nor a label value such as `"linkstr-push"`).
    static func metricNames(_ expressions: [String]) -> Set<String> {
        Set(
            expressions.flatMap { $0.matches(of: /[A-Za-z_:][A-Za-z0-9_:]*/).map { String($0.output) } }.filter { $0.hasPrefix("linkstr_") }
        )
    }

    /// The names of `names` the exposition has no `# TYPE` line for. A histogram's `_bucket`,
    /// `_sum` and `_count` series count as present when the histogram is (a summary's `_sum` and
    /// `_count` when the summary is).
    static func missing(_ names: Set<String>, in exposition: String) -> [String] {
        var types: [String: String] = [:]
        for line in exposition.split(separator: "\n") where line.hasPrefix("# TYPE ") {
            let fields = line.split(separator: " ")
            if fields.count >= 4 { types[String(fields[2])] = String(fields[3]) }
        }
        return names.filter { name in
            if types[name] != nil { return false }
            for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
                switch types[String(name.dropLast(suffix.count))] {
                case "histogram": return false
                case "summary" where suffix != "_bucket": return false
                default: continue
                }
            }
            return true
        }.sorted()
    }

    /// GitHub's anchor for a heading: lower-cased, punctuation dropped, spaces to hyphens.
    static func anchor(_ heading: String) -> String {
        String(
            heading.lowercased().unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) || $0 == " " || $0 == "-" || $0 == "_" }
                .map { $0 == " " ? "-" : Character($0) })
    }

    @Test func theAlertingRulesPassPromtoolsCheckAndTheirUnitTests() async throws {
        let promtool = try Self.promtool()
        let check = try await ChildProcess.run(promtool, ["check", "rules", Self.rules.path])
        #expect(check.code == 0, "promtool check rules \(Self.rules.path):\n\(check.output)")
        let test = try await ChildProcess.run(promtool, ["test", "rules", Self.ruleTests.path])
        #expect(test.code == 0, "promtool test rules \(Self.ruleTests.path):\n\(test.output)")
        #expect(test.output.contains("SUCCESS"), "\(test.output)")
    }

    /// Each alert waits (`for`), says how bad it is, links its runbook section, and is tested
    /// both firing and quiet.
    @Test func everyAlertHasAForASeverityARunbookSectionAndTests() async throws {
        let alerts = try await Self.alertingRules().filter { $0["alert"] != nil }
        #expect(alerts.count >= 6)
        let groups = try await Self.yaml(Self.rules)["groups"] as? [[String: Any]] ?? []
        #expect(groups.compactMap { $0["name"] as? String } == ["linkstr-push"])
        let headings = Set(
            try String(contentsOf: Self.operations, encoding: .utf8).split(separator: "\n")
                .filter { $0.hasPrefix("#") }.map { Self.anchor($0.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)) })
        #expect(headings.contains("alerts"), "docs/operations.md has an Alerts section")
        let tests = try await Self.yaml(Self.ruleTests)["tests"] as? [[String: Any]] ?? []
        let cases = tests.flatMap { $0["alert_rule_test"] as? [[String: Any]] ?? [] }
        for alert in alerts {
            let name = alert["alert"] as? String ?? "?"
            #expect(alert["for"] is String, "\(name) has no `for`")
            let severity = (alert["labels"] as? [String: Any])?["severity"] as? String
            #expect(severity == "warning" || severity == "critical", "\(name): severity \(severity ?? "none")")
            let annotations = alert["annotations"] as? [String: Any] ?? [:]
            for key in ["summary", "description", "runbook_url"] {
                #expect((annotations[key] as? String)?.isEmpty == false, "\(name) has no \(key)")
            }
            let runbook = annotations["runbook_url"] as? String ?? ""
            #expect(runbook == "docs/operations.md#\(name.lowercased())", "\(name): runbook_url \(runbook)")
            #expect(headings.contains(name.lowercased()), "docs/operations.md has no section \(name)")
            let own = cases.filter { $0["alertname"] as? String == name }
            #expect(own.contains { ($0["exp_alerts"] as? [Any])?.isEmpty == false }, "\(name) is never tested firing")
            #expect(own.contains { ($0["exp_alerts"] as? [Any])?.isEmpty ?? true }, "\(name) is never tested quiet")
        }
    }

    /// Every query of the dashboard, as a recording rule, passes `promtool check rules`; the
    /// dashboard names no data source but the one chosen in its `datasource` variable.
    @Test func everyDashboardQueryParsesAndTheDataSourceIsAVariable() async throws {
        let promtool = try Self.promtool()
        let queries = try Self.dashboardQueries()
        #expect(queries.count >= 10)
        let rules: [String: Any] = [
            "groups": [
                [
                    "name": "dashboard",
                    "rules": queries.enumerated().map { ["record": "dashboard:query_\($0.offset)", "expr": $0.element] },
                ]
            ]
        ]
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("dashboard-\(UUID().uuidString).yaml")
        defer { try? FileManager.default.removeItem(at: file) }
        // JSON is YAML (but for `\/`, which YAML has no escape for).
        try JSONSerialization.data(withJSONObject: rules, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]).write(to: file)
        let check = try await ChildProcess.run(promtool, ["check", "rules", file.path])
        #expect(check.code == 0, "a dashboard query does not parse:\n\(check.output)")
        #expect(check.output.contains("SUCCESS: \(queries.count) rules found"), "\(check.output)")

        let dashboard = try Self.dashboardJSON()
        let variables = (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        #expect(
            variables.contains {
                $0["name"] as? String == "datasource" && $0["type"] as? String == "datasource" && $0["query"] as? String == "prometheus"
            })
        let panels = Self.panels(dashboard).filter { $0["type"] as? String != "row" }
        for source in panels.map({ $0["datasource"] })
            + panels.flatMap({ ($0["targets"] as? [[String: Any]] ?? []).map { $0["datasource"] } })
        {
            #expect(
                (source as? [String: Any])?["uid"] as? String == "${datasource}", "a hard-coded data source: \(String(describing: source))")
        }
    }

    /// The name check itself: what the exposition declares is found (a histogram by its
    /// series), anything else is reported.
    @Test func aNameTheExpositionDoesNotDeclareIsReportedMissing() {
        let exposition = """
            # TYPE linkstr_pushes_total counter
            linkstr_pushes_total{outcome="delivered",reason="none"} 1
            # TYPE linkstr_apns_send_duration_seconds histogram
            linkstr_apns_send_duration_seconds_bucket{status="200",le="0.001"} 0
            """
        #expect(
            Self.missing(
                ["linkstr_pushes_total", "linkstr_apns_send_duration_seconds_bucket", "linkstr_apns_send_duration_seconds_count"],
                in: exposition
            ).isEmpty)
        #expect(
            Self.missing(["linkstr_no_such_metric", "linkstr_pushes_total_count", "linkstr_pushes"], in: exposition)
                == ["linkstr_no_such_metric", "linkstr_pushes", "linkstr_pushes_total_count"])
        #expect(
            Self.metricNames(["sum(rate(linkstr_a_total{x=\"linkstr-push\"}[5m])) / linkstr_b", "dashboard:linkstr_c"]) == [
                "linkstr_a_total", "linkstr_b",
            ])
    }

    /// A gateway watching a relay and delivering to the APNs sandbox, after a registration, a
    /// delivered push, a refused header, a rate-limited request and a scrape, exports every
    /// `linkstr_…` metric the alerting rules and the dashboard read; `linkstr_no_such_metric`
    /// is reported missing from the same exposition.
    @Test func everyMetricTheRulesAndTheDashboardReadIsExported() async throws {
        let expressions = try await Self.alertingRules().compactMap { $0["expr"] as? String } + (try Self.dashboardQueries())
        let names = Self.metricNames(expressions)
        #expect(names.count >= 10, "\(names.sorted())")
        let relay = try RelayFixture()
        try await relay.start()
        let bob = Keys.generate(), carol = Keys.generate(), alice = Keys.generate(), mallory = Keys.generate()
        try await SandboxFixture.with { sandbox in
            try await GatewayHarness.run(
                deliver: true, apns: sandbox.apns, watch: RelayWatchTests.settings([relay]),
                rateLimits: RateLimitSettings(perPubkey: .init(perSecond: 0.01, burst: 2))
            ) { gateway in
                // Bob is watched on the relay; carol gets typed pushes.
                try await RelayWatchTests.registerWatching(gateway, bob, HTTP2DeliveryTests.token(0xA1))
                try await RelayWatchTests.registerWatching(gateway, carol, HTTP2DeliveryTests.token(0xA2), watch: false)
                #expect(try await RelayWatchTests.waitLive(gateway, pubkeys: 1), "bob's subscription reached EOSE")
                #expect(
                    try await gateway.send(alice, .post, "/v1/push", json: ArchiveAndPushTests.pushBody(to: [carol])).status == .accepted)
                #expect(try await GatewayHarness.eventually { sandbox.delivered().count == 1 }, "the push was delivered")
                // A request with no Authorization header, and one over mallory's pubkey limit.
                #expect(try await gateway.send(nil, .post, "/v1/push", json: "{}").status == .unauthorized)
                var statuses: [HTTPResponse.Status] = []
                for seed: UInt8 in 0xB1...0xB3 {
                    statuses.append(
                        try await gateway.send(
                            mallory, .post, "/v1/devices/register", json: GatewayHarness.registerBody(HTTP2DeliveryTests.token(seed))
                        ).status)
                }
                #expect(statuses.last == .tooManyRequests, "\(statuses)")

                // Scrape-time values appear on a scrape; scrape until nothing is missing.
                let (text, complete) = try await GatewayHarness.eventually(
                    reading: { String(buffer: try await gateway.client.execute(uri: "/metrics", method: .get).body) },
                    until: { Self.missing(names, in: $0).isEmpty })
                #expect(complete, "not exported by a running gateway: \(Self.missing(names, in: text))")
                #expect(Self.missing(names.union(["linkstr_no_such_metric"]), in: text).contains("linkstr_no_such_metric"))
            }
        }
    }
}
