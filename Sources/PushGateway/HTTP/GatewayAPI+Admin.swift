import Foundation
import HTTPTypes
public import Hummingbird
import NIOCore
import NostrProtocol
import NostrRelay
import PostgresNIO

/// The admin routes: `GET /admin/status` (JSON, for scripts) and the operator's console
/// (`GET /admin`, HTML, for a browser), both behind `ADMIN_TOKEN` and off without it.
extension GatewayAPI {
    /// How a request proved it may see the admin routes.
    enum AdminAccess: Equatable {
        /// `Authorization: Bearer <ADMIN_TOKEN>`.
        case bearer
        /// A console session cookie (see `AdminSession`).
        case session
        case none
    }

    /// Throws 404 when admin routes are off.
    func adminAccess(_ request: Request) throws -> AdminAccess {
        guard let adminToken, let adminSession else { throw APIError.adminDisabled }
        if Self.constantTimeEquals(request.headers[.authorization] ?? "", "Bearer \(adminToken)") { return .bearer }
        if adminSession.accepts(cookieHeader: request.headers[.cookie], now: Date()) { return .session }
        return .none
    }

    /// `GET /admin/status` with `Authorization: Bearer <ADMIN_TOKEN>`.
    public func adminStatus(_ request: Request) async throws -> Response {
        guard try adminAccess(request) == .bearer else { throw APIError.unauthorized("admin token required", code: "admin_token") }
        let (devices, watching) = try await store.storage {
            var counts = (0, 0)
            for row in try await store.database.query(
                "SELECT (SELECT count(*) FROM devices)::int, (SELECT count(*) FROM devices WHERE relay_watch)::int", logger: store.logger
            ).decode((Int, Int).self) {
                counts = row
            }
            return counts
        }
        let queue: JSONValue =
            await queueDepth.value().map { depth in
                .object([
                    "jobs": .integer(Int64(depth.queued)), "due": .integer(Int64(depth.due)),
                    "oldest_job_age_seconds": .double(depth.oldestJobAgeSeconds),
                ])
            } ?? .null
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let failures: [JSONValue] = metrics.recentFailures.snapshot.map { failure in
            .object([
                "at": .string(formatter.string(from: failure.at)), "platform": .string(failure.platform),
                "status": .integer(Int64(failure.status)),
                "reason": .string(failure.reason),
                "outcome": .string(failure.outcome), "device_token": .string(failure.redactedToken),
            ])
        }
        let configurationErrors = JSONValue.object(
            metrics.configurationErrors.snapshot.mapValues { entry in
                [
                    "count": .integer(Int64(entry.count)), "last_reason": .string(entry.lastReason),
                    "last_at": .string(formatter.string(from: entry.lastAt)),
                ]
            })
        var watch: JSONValue = .null
        if let watcher { watch = Self.watchStatus(await watcher.status()) }
        var inboxStatus: JSONValue = .null
        if let inbox {
            let counts = inbox.status
            inboxStatus = .object([
                "connections": .integer(Int64(counts.connections)), "subscriptions": .integer(Int64(counts.subscriptions)),
            ])
        }
        var response = JSONBody.response(
            .ok,
            [
                "watch": watch, "inbox": inboxStatus,
                "status": "ok", "uptime_seconds": .integer(Int64(Date().timeIntervalSince(startedAt))),
                "devices": .integer(Int64(devices)), "relay_watch_devices": .integer(Int64(watching)),
                "queue": queue,
                "recent_push_failures": .array(failures), "configuration_errors": configurationErrors,
                "migration": .integer(Int64(latestMigration)),
            ])
        response.headers[.cacheControl] = "no-store"
        return response
    }

    /// Relays (state, last event, error, counters), shards held, watched pubkeys.
    static func watchStatus(_ status: RelayWatcher.Status) -> JSONValue {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return .object([
            "relays": .array(
                status.relays.map { relay in
                    var state = "idle"
                    var error: JSONValue = .null
                    switch relay.state {
                    case .idle: state = "idle"
                    case .connecting: state = "connecting"
                    case .connected: state = "connected"
                    case .authRequired: state = "auth_required"
                    case .failed(let reason):
                        state = "failed"
                        error = .string(reason)
                    case .refused(let reason):
                        state = "refused"
                        error = .string(reason)
                    case .stopped: state = "stopped"
                    }
                    let statistics = relay.statistics
                    let paused = statistics.readPausedTime
                    return .object([
                        "url": .string(relay.url), "state": .string(state), "error": error,
                        "last_event_at": relay.lastEventAt.map { .string(formatter.string(from: $0)) } ?? .null,
                        "connections": .integer(Int64(statistics.connections)), "failures": .integer(Int64(statistics.failures)),
                        "events": .integer(Int64(statistics.events)), "notices": .integer(Int64(statistics.notices)),
                        "live_pubkeys": .integer(Int64(relay.livePubkeys)),
                        // Rates over the last 10 s; invalid counts unreadable messages and events that
                        // failed the watcher's checks.
                        "events_per_second": .double(statistics.eventsPerSecond),
                        "invalid_per_second": .double(statistics.invalidPerSecond),
                        "invalid_events": .integer(Int64(statistics.invalidEvents + statistics.invalidMessages)),
                        "limit_disconnects": .integer(Int64(statistics.limitDisconnects.values.reduce(0, +))),
                        "last_limit": statistics.lastBreach.map { .string($0.rawValue) } ?? .null,
                        "reading_paused": .bool(statistics.readingPaused),
                        "read_paused_seconds": .double(paused.inSeconds),
                        "resubscribed_after_pause": .integer(Int64(statistics.resubscribedAfterPause)),
                    ])
                }),
            "shards": .array(status.shards.map { .integer(Int64($0)) }),
            "watched_pubkeys": .integer(Int64(status.watchedPubkeys)),
            "user_relays": .object(status.userRelays.mapValues { .integer(Int64($0)) }),
            "users_with_own_relays": .integer(Int64(status.usersWithOwnRelays)),
            "pending_wraps": .integer(Int64(status.pendingSightings)),
        ])
    }

    /// `GET /admin`: the console for a signed-in browser (or a bearer token); the sign-in form otherwise.
    public func console(_ request: Request) async throws -> Response {
        guard try adminAccess(request) != .none else { return Self.html(.unauthorized, ConsolePage.signIn(problem: nil)) }
        return Self.html(.ok, ConsolePage.render(await consoleSnapshot()))
    }

    /// `POST /admin/login` with the form field `token`: a session cookie and back to the console,
    /// or the form again. Failed tries count as `linkstr_auth_failures_total{reason="admin_token"}`;
    /// every try counts against the address's sign-in limit (10 a minute), and the per-address
    /// limit of every request.
    public func signIn(_ request: inout Request, context: GatewayRequestContext) async throws -> Response {
        guard let adminToken, let adminSession else { throw APIError.adminDisabled }
        let address = RateLimitMiddleware.clientAddress(request, context: context, trustForwardedFor: trustForwardedFor)
        if let wait = signInLimiter.take(address) {
            metrics.rateLimited(scope: "admin_sign_in")
            throw APIError.rateLimited(retryAfter: wait)
        }
        let form: [String: String]
        do {
            form = try FormBody.parse(Array(try await request.body.collect(upTo: FormBody.maxBytes).readableBytesView))
        } catch {
            return Self.html(.badRequest, ConsolePage.signIn(problem: "The form could not be read. Try again."))
        }
        guard let token = form["token"], Self.constantTimeEquals(token, adminToken) else {
            metrics.authFailure(reason: "admin_token")
            return Self.html(.unauthorized, ConsolePage.signIn(problem: "That is not this gateway's admin token."))
        }
        return Response(
            status: .seeOther, headers: [.location: "/admin", .setCookie: adminSession.cookie(now: Date()), .cacheControl: "no-store"])
    }

    /// `POST /admin/logout`: clears the session cookie. Only a request that carries the session
    /// clears it: the cookie is `SameSite=Strict`, so a form on another site posting here arrives
    /// without it and cannot sign the operator out.
    public func signOut(_ request: Request) throws -> Response {
        guard let adminSession else { throw APIError.adminDisabled }
        var headers: HTTPFields = [.location: "/admin", .cacheControl: "no-store"]
        if adminSession.accepts(cookieHeader: request.headers[.cookie], now: Date()) { headers[.setCookie] = adminSession.clearingCookie }
        return Response(status: .seeOther, headers: headers)
    }

    /// What the console shows now, from the snapshots `/readyz` and `/metrics` keep.
    func consoleSnapshot() async -> ConsoleSnapshot {
        let (status, body) = await readiness.value()
        var problem: String?
        if case .string(let error)? = body["error"] { problem = error }
        var applied: Int?
        if case .integer(let version)? = body["migration"] { applied = Int(version) }
        let now = Date()
        return ConsoleSnapshot(
            generatedAt: now, ready: status == .ok, readinessProblem: problem, uptimeSeconds: Int(now.timeIntervalSince(startedAt)),
            migrationApplied: applied, migrationExpected: latestMigration, queue: await queueDepth.value(),
            pushRates: metrics.recentPushRates,
            watch: await watcher?.status(), recentFailures: metrics.recentFailures.snapshot)
    }

    /// An HTML page with the console's headers: nothing cached, framed, sniffed or loaded from elsewhere.
    static func html(_ status: HTTPResponse.Status, _ page: String) -> Response {
        Response(
            status: status,
            headers: [
                .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
                .contentSecurityPolicy: ConsolePage.contentSecurityPolicy,
                .xContentTypeOptions: "nosniff", HTTPField.Name("Referrer-Policy")!: "no-referrer",
            ], body: .init(byteBuffer: ByteBuffer(string: page)))
    }
}
