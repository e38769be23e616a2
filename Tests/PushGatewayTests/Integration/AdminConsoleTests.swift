import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NostrProtocol
import PushGateway
import Testing

/// `/admin` against a running gateway and real PostgreSQL: the sign-in, the session cookie, the
/// headers, and the figures of a gateway that has done something.
@Suite struct AdminConsoleTests {
    static func form(_ token: String) -> ByteBuffer {
        ByteBuffer(string: "token=" + (token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""))
    }

    static let formHeaders: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]

    @Test func aBrowserSignsInSeesTheConsoleAndSignsOut() async throws {
        try await GatewayHarness.run { gateway in
            // No session: the sign-in form, with the console's headers.
            let anonymous = try await gateway.client.execute(uri: "/admin", method: .get)
            #expect(anonymous.status == .unauthorized)
            #expect(String(buffer: anonymous.body).contains(#"<form method="post" action="/admin/login">"#))
            #expect(anonymous.headers[.contentType] == "text/html; charset=utf-8")
            #expect(anonymous.headers[.contentSecurityPolicy]?.contains("default-src 'none'") == true)
            #expect(anonymous.headers[.cacheControl] == "no-store")
            #expect(
                try await gateway.client.execute(uri: "/admin/status", method: .get, headers: [.authorization: "Bearer admin-secret"])
                    .headers[.cacheControl] == "no-store")

            // A wrong token: the form again, counted, no cookie.
            let wrong = try await gateway.client.execute(
                uri: "/admin/login", method: .post, headers: Self.formHeaders, body: Self.form("admin-secreT"))
            #expect(wrong.status == .unauthorized)
            #expect(wrong.headers[.setCookie] == nil)
            #expect(String(buffer: wrong.body).contains("That is not this gateway&#39;s admin token."))
            let unreadable = try await gateway.client.execute(
                uri: "/admin/login", method: .post, headers: Self.formHeaders,
                body: ByteBuffer(string: "token=%zz"))
            #expect(unreadable.status == .badRequest)
            let oversized = try await gateway.client.execute(
                uri: "/admin/login", method: .post, headers: Self.formHeaders,
                body: ByteBuffer(string: "token=" + String(repeating: "a", count: 5000)))
            #expect(oversized.status == .badRequest)

            // The right token: a cookie, and back to the console.
            let signedIn = try await gateway.client.execute(
                uri: "/admin/login", method: .post, headers: Self.formHeaders, body: Self.form("admin-secret"))
            #expect(signedIn.status == .seeOther)
            #expect(signedIn.headers[.location] == "/admin")
            let setCookie = try #require(signedIn.headers[.setCookie])
            #expect(
                setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict") && setCookie.contains("Secure"),
                "PUBLIC_URL is https")
            let cookie = try #require(setCookie.split(separator: ";").first.map(String.init))
            var console = try await gateway.client.execute(uri: "/admin", method: .get, headers: [.cookie: cookie])
            // Readiness is a snapshot refreshed at most once a second, each check under a 1.5 s
            // deadline: on a loaded machine the first may miss it, and a later one answers.
            let deadline = ContinuousClock.now + .seconds(30)
            while !String(buffer: console.body).contains(#"data-field="readiness">ready<"#), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(250))
                console = try await gateway.client.execute(uri: "/admin", method: .get, headers: [.cookie: cookie])
            }
            #expect(console.status == .ok)
            let html = String(buffer: console.body)
            #expect(html.contains(#"data-field="readiness">ready<"#), "\(html.prefix(2000))")
            #expect(html.contains(#"data-field="queue-queued">0<"#))

            // A forged or tampered cookie is the sign-in form; the bearer token also works (curl).
            let tampered = try await gateway.client.execute(uri: "/admin", method: .get, headers: [.cookie: cookie + "0"])
            #expect(tampered.status == .unauthorized)
            let bearer = try await gateway.client.execute(uri: "/admin", method: .get, headers: [.authorization: "Bearer admin-secret"])
            #expect(bearer.status == .ok)
            // The cookie is for the console only: /admin/status still wants the bearer token.
            #expect(
                try await gateway.client.execute(uri: "/admin/status", method: .get, headers: [.cookie: cookie]).status == .unauthorized)

            // A post without the session (a form on another site: the cookie is SameSite=Strict)
            // clears nothing; the browser's own sign-out does.
            let crossSite = try await gateway.client.execute(uri: "/admin/logout", method: .post)
            #expect(crossSite.status == .seeOther && crossSite.headers[.setCookie] == nil)
            let signedOut = try await gateway.client.execute(uri: "/admin/logout", method: .post, headers: [.cookie: cookie])
            #expect(signedOut.status == .seeOther)
            #expect(signedOut.headers[.setCookie]?.contains("Max-Age=0") == true)

            let metrics = String(buffer: try await gateway.client.execute(uri: "/metrics", method: .get).body)
            // The wrong token at sign-in, and /admin/status asked with a cookie.
            #expect(metrics.contains(#"linkstr_auth_failures_total{reason="admin_token"} 2"#))
            #expect(metrics.contains("linkstr_ready 1"))
        }
    }

    /// What a push did shows on the console: the queue and the push table.
    @Test func theConsoleShowsTheQueueAndThePushesOfARealPush() async throws {
        try await GatewayHarness.run { gateway in
            let alice = Keys.generate(), bob = Keys.generate()
            #expect(
                try await gateway.send(bob, .post, "/v1/devices/register", json: GatewayHarness.registerBody(GatewayHarness.token(0x31)))
                    .status == .accepted)
            #expect(try await gateway.send(alice, .post, "/v1/push", json: ArchiveAndPushTests.pushBody(to: [bob])).status == .accepted)
            // Nobody delivers here: the job stays queued, and the console says so on a later refresh.
            #expect(
                try await GatewayHarness.eventually(within: 30) {
                    let html = String(
                        buffer: try await gateway.client.execute(
                            uri: "/admin", method: .get, headers: [.authorization: "Bearer admin-secret"]
                        ).body)
                    return html.contains(#"data-field="queue-queued">1<"#)
                })
            let status = try await gateway.send(nil, .get, "/admin/status", headers: [.authorization: "Bearer admin-secret"])
            #expect(status.json?["queue"]?["jobs"] == 1)
            let metrics = String(buffer: try await gateway.client.execute(uri: "/metrics", method: .get).body)
            #expect(metrics.contains("linkstr_queue_oldest_job_age_seconds "))
        }
    }

    /// Guessing the token through the form: 10 tries a minute per address, whatever RATE_LIMIT_IP
    /// says (the harness runs with the per-address limit off).
    @Test func signInTriesAreLimitedPerAddress() async throws {
        try await GatewayHarness.run { gateway in
            // The bucket refills one try every 6 s, so on a machine slow enough to spread the
            // guesses over more than that, a few more pass: the guesses go on until one is
            // refused, and the count allowed is checked against the time they took.
            let started = ContinuousClock.now
            var guesses = 0
            // The refused guess: when it was sent, and how long it was told to wait.
            var refusal: (sent: ContinuousClock.Instant, retryAfter: Int)?
            while refusal == nil {
                let sent = ContinuousClock.now
                let wrong = try await gateway.client.execute(
                    uri: "/admin/login", method: .post, headers: Self.formHeaders, body: Self.form("guess"))
                if wrong.status == .tooManyRequests {
                    refusal = (sent, try #require(wrong.headers[.retryAfter].flatMap { Int($0) }))
                } else {
                    #expect(wrong.status == .unauthorized)
                    guesses += 1
                    try #require(guesses <= 40, "the sign-in is never limited")
                }
            }
            let refills = Int((ContinuousClock.now - started) / .seconds(6))
            #expect(guesses >= 10 && guesses <= 10 + refills, "10 tries, and one more per 6 s they took (\(refills))")
            // The next, even with the right token, waits, unless it came so late (a busy machine)
            // that the wait it was told of (Retry-After, whole seconds rounded up) had passed.
            let limited = try await gateway.client.execute(
                uri: "/admin/login", method: .post, headers: Self.formHeaders, body: Self.form("admin-secret"))
            var refusals = 1
            if limited.status == .tooManyRequests {
                refusals += 1
                #expect(limited.headers[.retryAfter] != nil)
            } else {
                let late = ContinuousClock.now - (refusal?.sent ?? started)
                let wait = Duration.seconds((refusal?.retryAfter ?? 1) - 1)
                #expect(late > wait && limited.status == .seeOther, "let in \(late) after a refusal to wait \(wait): \(limited.status)")
            }
            let metrics = String(buffer: try await gateway.client.execute(uri: "/metrics", method: .get).body)
            #expect(metrics.contains(#"linkstr_rate_limited_total{scope="admin_sign_in"} \#(refusals)"#))
            #expect(metrics.contains(#"linkstr_auth_failures_total{reason="admin_token"} \#(guesses)"#))
            // The bearer token is not a sign-in: curl and scripts are not held up.
            #expect(
                try await gateway.client.execute(uri: "/admin", method: .get, headers: [.authorization: "Bearer admin-secret"]).status
                    == .ok)
        }
    }

    @Test func theConsoleIsOffWithoutAnAdminToken() async throws {
        try await TestDatabase.with { url, database in
            let configuration = GatewayHarness.configuration(url, adminToken: nil)
            let app = try GatewayApplication.build(
                configuration: configuration, migrator: try Migrator.load(directory: Migrator.defaultDirectory()),
                deliver: false, metrics: GatewayMetrics(), logger: TestDatabase.logger)
            try await app.test(.live) { (client: any TestClientProtocol) async throws in
                #expect(try await client.execute(uri: "/admin", method: .get).status == .notFound)
                #expect(
                    try await client.execute(uri: "/admin/login", method: .post, headers: Self.formHeaders, body: Self.form("")).status
                        == .notFound)
                #expect(try await client.execute(uri: "/admin/logout", method: .post).status == .notFound)
            }
        }
    }
}
