import Foundation
import NostrRelay

/// The operator's console (`GET /admin`) as HTML: one self-contained page, no scripts, no external
/// assets, refreshed by the browser every few seconds. Every figure carries a `data-field`
/// attribute so that tests (and scrapers) can read it without parsing the prose. Every text from
/// outside, a relay's error or an APNs reason, is escaped.
package enum ConsolePage {
    /// How often the page reloads itself.
    package static let refreshSeconds = 5

    /// Headers for every console page: nothing may load from elsewhere, run, frame the page or be cached.
    package static let contentSecurityPolicy =
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    /// Outcomes in the order the push table lists them; others follow by name.
    static let outcomeOrder = [
        "delivered", "device_removed", "retry", "token_refresh", "dropped", "configuration_error", "expired", "over_budget",
    ]

    package static func render(_ snapshot: ConsoleSnapshot) -> String {
        var html = head(title: "linkstr-push console", refresh: true)
        html += "<header><h1>linkstr-push</h1>"
        html +=
            snapshot.ready
            ? "<span class=\"badge ok\" data-field=\"readiness\">ready</span>"
            : "<span class=\"badge bad\" data-field=\"readiness\">not ready</span>"
        html += "<form method=\"post\" action=\"/admin/logout\"><button type=\"submit\">Sign out</button></form></header>\n<main>\n"
        html += serviceSection(snapshot)
        html += queueSection(snapshot)
        html += pushSection(snapshot)
        html += relaySection(snapshot)
        html += failureSection(snapshot)
        html += "</main>\n<footer>Read at <time data-field=\"generated-at\">\(escape(timestamp(snapshot.generatedAt)))</time> UTC"
        html += " · reloads every \(refreshSeconds) s · the same figures as JSON: <code>GET /admin/status</code></footer>\n</body></html>\n"
        return html
    }

    /// The sign-in form, with `problem` (a fixed text of ours) above it when the last try failed.
    package static func signIn(problem: String?) -> String {
        var html = head(title: "linkstr-push console · sign in", refresh: false)
        html += "<header><h1>linkstr-push</h1></header>\n<main><section class=\"signin\"><h2>Sign in</h2>\n"
        if let problem { html += "<p class=\"problem\" role=\"alert\" data-field=\"sign-in-problem\">\(escape(problem))</p>\n" }
        html += """
            <form method="post" action="/admin/login">
            <label for="token">Admin token (<code>ADMIN_TOKEN</code>)</label>
            <input id="token" name="token" type="password" autocomplete="current-password" required>
            <button type="submit">Sign in</button>
            </form></section></main>
            </body></html>

            """
        return html
    }

    // MARK: Sections

    static func serviceSection(_ snapshot: ConsoleSnapshot) -> String {
        var rows: [(String, String, String)] = [
            ("Readiness", "readiness-detail", snapshot.ready ? "ready" : "not ready: \(snapshot.readinessProblem ?? "unknown")"),
            ("Uptime", "uptime", duration(Double(snapshot.uptimeSeconds))),
        ]
        let migration =
            snapshot.migrationApplied.map { "\($0) of \(snapshot.migrationExpected)" } ?? "unknown (needs \(snapshot.migrationExpected))"
        rows.append(("Schema migration", "migration", migration))
        return section("service", "Service", definitions(rows))
    }

    static func queueSection(_ snapshot: ConsoleSnapshot) -> String {
        guard let queue = snapshot.queue else {
            return section(
                "queue", "Queue", "<p class=\"problem\" data-field=\"queue-unavailable\">The database did not answer in time.</p>")
        }
        return section(
            "queue", "Queue",
            definitions([
                ("Jobs queued", "queue-queued", "\(queue.queued)"),
                ("Due now", "queue-due", "\(queue.due)"),
                ("Oldest job", "queue-oldest", queue.queued == 0 ? "none" : duration(queue.oldestJobAgeSeconds)),
            ]))
    }

    static func pushSection(_ snapshot: ConsoleSnapshot) -> String {
        let window = snapshot.pushRates
        let series = window.series(endingAt: snapshot.generatedAt.timeIntervalSince1970)
        let minutes = window.bucketSeconds * window.bucketCount / 60
        let title = "Pushes, last \(minutes) minutes"
        guard !series.isEmpty else {
            return section("pushes", title, "<p data-field=\"pushes-none\">No push in the last \(minutes) minutes.</p>")
        }
        let outcomes = outcomeOrder.filter { series[$0] != nil } + series.keys.filter { !outcomeOrder.contains($0) }.sorted()
        let lastMinuteBuckets = max(1, 60 / window.bucketSeconds)
        let peak = max(1, series.values.flatMap { $0 }.max() ?? 1)
        var table = "<div class=\"scroll\"><table><thead><tr><th>Outcome</th><th class=\"spark\">Per \(window.bucketSeconds) s</th>"
        table += "<th class=\"num\">Total</th><th class=\"num\">Per second, last minute</th></tr></thead><tbody>\n"
        for outcome in outcomes {
            let counts = series[outcome] ?? []
            let total = counts.reduce(0, +)
            let recent = Double(counts.suffix(lastMinuteBuckets).reduce(0, +)) / Double(lastMinuteBuckets * window.bucketSeconds)
            table +=
                "<tr data-outcome=\"\(escape(outcome))\"><td class=\"key\">\(escape(outcome.replacingOccurrences(of: "_", with: " ")))</td>"
            table += "<td class=\"spark\">\(sparkline(counts, peak: peak, outcome: outcome))</td>"
            table += "<td class=\"num\" data-label=\"Total\" data-field=\"pushes-total\">\(total)</td>"
            table +=
                "<td class=\"num\" data-label=\"Per second, last minute\" data-field=\"pushes-per-second\">\(String(format: "%.2f", recent))</td></tr>\n"
        }
        table += "</tbody></table></div>"
        return section("pushes", title, table)
    }

    static func relaySection(_ snapshot: ConsoleSnapshot) -> String {
        guard let watch = snapshot.watch else {
            return section("relays", "Relays", "<p data-field=\"watch-off\">The relay watcher is off (<code>RELAYS</code> is not set).</p>")
        }
        var body = definitions([
            ("Shards held", "shards", watch.shards.isEmpty ? "none" : watch.shards.map(String.init).joined(separator: ", ")),
            ("Watched pubkeys", "watched-pubkeys", "\(watch.watchedPubkeys)"),
            ("Wraps waiting to be recorded", "pending-wraps", "\(watch.pendingSightings)"),
        ])
        body += "<div class=\"scroll\"><table><thead><tr><th>Relay</th><th>State</th><th>Last event</th>"
        body += "<th class=\"num\">Events/s</th><th class=\"num\">Live pubkeys</th></tr></thead><tbody>\n"
        for relay in watch.relays {
            let (state, good) = describe(relay.state)
            body += "<tr data-relay=\"\(escape(relay.url))\"><td class=\"url key\">\(escape(relay.url))</td>"
            body +=
                "<td data-label=\"State\"><span class=\"badge \(good ? "ok" : "bad")\" data-field=\"relay-state\">\(escape(state))</span></td>"
            body +=
                "<td data-label=\"Last event\" data-field=\"relay-last-event\">\(relay.lastEventAt.map { escape(ago($0, now: snapshot.generatedAt)) } ?? "never")</td>"
            body += "<td class=\"num\" data-label=\"Events/s\">\(String(format: "%.1f", relay.statistics.eventsPerSecond))</td>"
            body += "<td class=\"num\" data-label=\"Live pubkeys\">\(relay.livePubkeys)</td></tr>\n"
        }
        body += "</tbody></table></div>"
        return section("relays", "Relays", body)
    }

    static func failureSection(_ snapshot: ConsoleSnapshot) -> String {
        guard !snapshot.recentFailures.isEmpty else {
            return section("failures", "Recent push failures", "<p data-field=\"failures-none\">None since the instance started.</p>")
        }
        var table =
            "<div class=\"scroll\"><table><thead><tr><th>When</th><th>Platform</th><th class=\"num\">Status</th><th>Reason</th><th>Outcome</th>"
        table += "<th>Device</th></tr></thead><tbody>\n"
        for failure in snapshot.recentFailures.prefix(20) {
            table += "<tr data-field=\"failure\"><td class=\"key\">\(escape(ago(failure.at, now: snapshot.generatedAt)))</td>"
            table += "<td data-label=\"Platform\">\(escape(failure.platform))</td>"
            table +=
                "<td class=\"num\" data-label=\"Status\">\(failure.status)</td><td data-label=\"Reason\">\(escape(failure.reason))</td>"
            table += "<td data-label=\"Outcome\">\(escape(failure.outcome.replacingOccurrences(of: "_", with: " ")))</td>"
            table += "<td class=\"url\" data-label=\"Device\">\(escape(failure.redactedToken))</td></tr>\n"
        }
        table += "</tbody></table></div>"
        return section("failures", "Recent push failures", table)
    }

    // MARK: Pieces

    static func head(title: String, refresh: Bool) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        \(refresh ? "<meta http-equiv=\"refresh\" content=\"\(refreshSeconds)\">\n" : "")<title>\(escape(title))</title>
        <style>\(style)</style></head><body>

        """
    }

    static let style = """
        :root{color-scheme:light dark;--fg:#1d1d1f;--muted:#6e6e73;--line:#d2d2d7;--card:#f5f5f7;--ok:#1a7f37;--bad:#c62828}
        @media (prefers-color-scheme:dark){:root{--fg:#f5f5f7;--muted:#a1a1a6;--line:#424245;--card:#1c1c1e;--ok:#3fb950;--bad:#ff6b6b}}
        *{box-sizing:border-box}body{margin:0;font:15px/1.45 system-ui,-apple-system,sans-serif;color:var(--fg)}
        header{display:flex;flex-wrap:wrap;align-items:center;gap:.75rem;padding:.75rem 1rem;border-bottom:1px solid var(--line)}
        header h1{font-size:1.15rem;margin:0}header form{margin-left:auto}
        main{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,22rem),1fr));gap:1rem;padding:1rem;max-width:80rem}
        section{background:var(--card);border-radius:.6rem;padding:.75rem 1rem;min-width:0}
        #pushes,#relays,#failures{grid-column:1/-1}h2{font-size:1rem;margin:.1rem 0 .6rem}
        dl{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem;margin:0}dt{color:var(--muted)}dd{margin:0;font-variant-numeric:tabular-nums}
        .scroll{overflow-x:auto}table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid var(--line);white-space:nowrap}
        th{color:var(--muted);font-weight:500}.num{text-align:right;font-variant-numeric:tabular-nums}.url{font-family:ui-monospace,monospace;white-space:normal;word-break:break-all}
        td.spark,th.spark{width:40%;min-width:8rem}svg{display:block;width:100%;height:2rem}
        .badge{display:inline-block;padding:.05rem .55rem;border-radius:1rem;font-size:.85rem;color:#fff}.ok{background:var(--ok)}.bad{background:var(--bad)}
        .problem{color:var(--bad)}footer{color:var(--muted);font-size:.85rem;padding:0 1rem 1rem}
        @media (max-width:40rem){thead{display:none}table,tbody,tr,td{display:block;width:100%}
        tr{padding:.4rem 0;border-bottom:1px solid var(--line)}td{border:0;padding:.15rem 0;white-space:normal;text-align:left}
        td[data-label]{display:flex;justify-content:space-between;gap:1rem}td[data-label]::before{content:attr(data-label);color:var(--muted)}
        td.key{font-weight:600}td.spark{min-width:0;width:100%}dl{grid-template-columns:minmax(0,auto) 1fr}}
        .signin{max-width:24rem;margin:2rem auto}.signin label{display:block;margin-bottom:.3rem}
        input{width:100%;font:inherit;padding:.45rem;margin-bottom:.6rem;border:1px solid var(--line);border-radius:.4rem}
        button{font:inherit;padding:.35rem .9rem;border-radius:.4rem;border:1px solid var(--line);background:transparent;color:inherit;cursor:pointer}
        """

    static func section(_ id: String, _ title: String, _ body: String) -> String {
        "<section id=\"\(id)\"><h2>\(escape(title))</h2>\n\(body)\n</section>\n"
    }

    /// A definition list; values are ours or already escaped by the caller where they are not.
    static func definitions(_ rows: [(label: String, field: String, value: String)]) -> String {
        "<dl>" + rows.map { "<dt>\(escape($0.label))</dt><dd data-field=\"\($0.field)\">\(escape($0.value))</dd>" }.joined() + "</dl>"
    }

    /// One outcome's counts as a line over the window, scaled to the busiest outcome's peak so
    /// the lines compare.
    static func sparkline(_ counts: [Int], peak: Int, outcome: String) -> String {
        let height = 30.0
        let step = counts.count > 1 ? 100.0 / Double(counts.count - 1) : 0
        let points = counts.enumerated().map { index, count in
            String(format: "%.1f,%.1f", Double(index) * step, height + 1 - Double(count) / Double(peak) * height)
        }.joined(separator: " ")
        let colour = outcome == "delivered" ? "var(--ok)" : outcome == "over_budget" || outcome == "retry" ? "#b26b00" : "var(--bad)"
        return "<svg viewBox=\"0 0 100 32\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"\(escape(outcome)) per bucket\">"
            + "<polyline fill=\"none\" style=\"stroke:\(colour)\" stroke-width=\"1.5\" vector-effect=\"non-scaling-stroke\" points=\"\(points)\"/></svg>"
    }

    static func describe(_ state: RelayState) -> (text: String, good: Bool) {
        switch state {
        case .idle: ("idle", false)
        case .connecting: ("connecting", false)
        case .connected: ("connected", true)
        case .authRequired: ("AUTH required", false)
        case .failed(let reason): ("failed: \(reason)", false)
        case .refused(let reason): ("refused: \(reason)", false)
        case .stopped: ("stopped", false)
        }
    }

    /// `3 h 12 m`, `4 m 05 s`, `12 s`.
    static func duration(_ seconds: Double) -> String {
        // Clamped before the conversion: Int(_:) traps on a value that is not finite or too large.
        let total = seconds.isFinite ? Int(min(max(seconds, 0), 1e12).rounded(.down)) : 0
        let (days, hours, minutes, rest) = (total / 86_400, total / 3600 % 24, total / 60 % 60, total % 60)
        if days > 0 { return "\(days) d \(hours) h" }
        if hours > 0 { return "\(hours) h \(minutes) m" }
        if minutes > 0 { return "\(minutes) m \(String(format: "%02d", rest)) s" }
        return "\(rest) s"
    }

    static func ago(_ date: Date, now: Date) -> String {
        "\(duration(now.timeIntervalSince(date))) ago"
    }

    static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date).replacingOccurrences(of: "Z", with: "").replacingOccurrences(of: "T", with: " ")
    }

    /// Text for HTML content and attribute values.
    package static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case "\u{0}"..."\u{8}", "\u{B}", "\u{C}", "\u{E}"..."\u{1F}", "\u{7F}": out += "\u{FFFD}"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }
}
