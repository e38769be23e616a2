public import CoreMetrics
import Foundation
import NostrProtocol
public import Prometheus

/// The gateway's Prometheus metrics, recorded through swift-metrics into one collector registry
/// that `GET /metrics` renders. Nothing is bootstrapped globally, so several gateways (tests) can
/// live in one process; `linkstr-push serve` additionally bootstraps `MetricsSystem` with the same
/// factory so library metrics land in the same registry.
///
/// Names and labels:
/// - `linkstr_http_requests_total{route,method,status}` (method: one of `countedMethods`, else `other`)
/// - `linkstr_auth_failures_total{reason}`
/// - `linkstr_ready` (1 when `/readyz` answers 200, else 0; refreshed at scrape time)
/// - `linkstr_queue_jobs{state="queued"|"due"}`, `linkstr_queue_oldest_job_age_seconds` (read from
///   PostgreSQL at scrape time, at most once a second)
/// - `linkstr_pushes_total{outcome,reason}`: outcome is delivered, device_removed, retry,
///   token_refresh, dropped, configuration_error, expired or over_budget (a device's
///   `PUSH_DEVICE_BUDGET` spent: dropped, never queued); reason is Apple's (or `none`)
/// - `linkstr_readiness_checks_total` (database reads behind `/readyz`, at most one a second)
/// - `linkstr_apns_send_duration_seconds{status}` (histogram)
/// - `linkstr_apns_jwt_age_seconds{key_id}`
/// - `linkstr_apns_goaway_resends_total` (requests APNs refused with GOAWAY, sent again)
/// - relay watcher: `linkstr_watch_events_total{relay}` (gift wraps received),
///   `linkstr_watch_invalid_events_total{relay}` (bad id or signature, dropped),
///   `linkstr_watch_duplicates_total` (wraps seen before, on another relay, instance or run),
///   `linkstr_watch_pushes_total{kind="queued"|"coalesced"}`,
///   `linkstr_watch_relay_connections_total{relay}` (connects; more than one means reconnects),
///   `linkstr_watch_subscriptions_closed_total` (REQs a relay closed; they are issued again),
///   `linkstr_watch_relay_to_queue_seconds` (histogram: received to committed in the queue),
///   `linkstr_watch_pubkeys`, `linkstr_watch_shards`, `linkstr_watch_pending_wraps` (gauges);
///   per relay, read from its connection at scrape time: `linkstr_watch_relay_up` (1 connected,
///   0 otherwise), `linkstr_watch_relay_events_per_second`,
///   `linkstr_watch_relay_invalid_per_second`, `linkstr_watch_relay_reading_paused` (gauges),
///   `linkstr_watch_relay_limit_disconnects_total{relay,reason="flood"|"invalid"}`,
///   `linkstr_watch_relay_read_paused_seconds_total`, `linkstr_watch_relay_resubscribed_after_pause_total`,
///   `linkstr_watch_relay_log_lines_suppressed_total` (counters)
public final class GatewayMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    public let factory: PrometheusMetricsFactory
    /// The last push failures on every platform, for `GET /admin/status` and the console.
    public let recentFailures = RecentPushFailures(capacity: 50)
    /// Configuration errors per platform, for `GET /admin/status`.
    public let configurationErrors = ConfigurationErrorTally()
    /// Pushes by outcome over the last 15 minutes, for the console's sparklines.
    private let pushRates = Locked(PushRateWindow.console)
    private let scrapeHooks = Locked<[@Sendable () async -> Void]>([])
    /// The handles counted on every push and request, made once per label set.
    private let requestCounters = MetricHandleCache<RequestLabels, CoreMetrics.Counter>()
    private let pushCounters = MetricHandleCache<PushLabels, CoreMetrics.Counter>()
    private let apnsSendTimers = MetricHandleCache<Int, CoreMetrics.Timer>()

    private struct RequestLabels: Hashable, Sendable {
        var route: String
        var method: String
        var status: Int
    }

    private struct PushLabels: Hashable, Sendable {
        var outcome: String
        var reason: String?
    }

    /// The methods a request is counted under; any other is `other`, so that the label's values
    /// stay a fixed set whatever a client sends.
    static let countedMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(5), .seconds(10),
        ]
        self.factory = factory
    }

    public func request(route: String, method: String, status: Int) {
        let labels = RequestLabels(route: route, method: Self.countedMethods.contains(method) ? method : "other", status: status)
        requestCounters.handle(labels) {
            Counter(
                label: "linkstr_http_requests_total",
                dimensions: [("route", labels.route), ("method", labels.method), ("status", String(labels.status))], factory: factory)
        }
        .increment()
    }

    public func authFailure(reason: String) {
        Counter(label: "linkstr_auth_failures_total", dimensions: [("reason", reason)], factory: factory).increment()
    }

    /// A request refused by a rate limit (`scope`: `ip` or `pubkey`).
    public func rateLimited(scope: String) {
        Counter(label: "linkstr_rate_limited_total", dimensions: [("scope", scope)], factory: factory).increment()
    }

    /// `/readyz` read the database (at most once a second, whatever the number of probes).
    public func readinessChecked() {
        Counter(label: "linkstr_readiness_checks_total", factory: factory).increment()
    }

    public func push(outcome: String, reason: String?, count: Int = 1) {
        pushCounters.handle(PushLabels(outcome: outcome, reason: reason)) {
            Counter(label: "linkstr_pushes_total", dimensions: [("outcome", outcome), ("reason", reason ?? "none")], factory: factory)
        }
        .increment(by: count)
        let now = Date().timeIntervalSince1970
        pushRates.withLock { $0.record(outcome, count: count, at: now) }
    }

    /// Pushes by outcome over the last 15 minutes (see `PushRateWindow`).
    public var recentPushRates: PushRateWindow { pushRates.withLock { $0 } }

    public func apnsSend(status: Int, duration: Duration) {
        let nanoseconds = duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
        apnsSendTimers.handle(status) {
            Timer(label: "linkstr_apns_send_duration_seconds", dimensions: [("status", String(status))], factory: factory)
        }
        .recordNanoseconds(nanoseconds)
    }

    /// Requests a GOAWAY refused before APNs processed them, sent again on a fresh connection.
    public func apnsResentAfterGoAway(_ count: Int) {
        Counter(label: "linkstr_apns_goaway_resends_total", factory: factory).increment(by: count)
    }

    public func queue(_ depth: QueueDepth) {
        Gauge(label: "linkstr_queue_jobs", dimensions: [("state", "queued")], factory: factory).record(depth.queued)
        Gauge(label: "linkstr_queue_jobs", dimensions: [("state", "due")], factory: factory).record(depth.due)
        Gauge(label: "linkstr_queue_oldest_job_age_seconds", factory: factory).record(depth.oldestJobAgeSeconds)
    }

    /// Whether `/readyz` answers 200, as of its last refresh.
    public func ready(_ ready: Bool) {
        Gauge(label: "linkstr_ready", factory: factory).record(ready ? 1 : 0)
    }

    public func jwtAge(keyID: String, seconds: Double) {
        Gauge(label: "linkstr_apns_jwt_age_seconds", dimensions: [("key_id", keyID)], factory: factory).record(seconds)
    }

    /// The per-relay event counters, made once per subscription and incremented per event (a
    /// lookup per event would cost more than the increment).
    /// `signatureChecks`: events whose signature was checked here; a copy of a wrap another relay
    /// already delivered is not checked again, so with several relays it stays below `events`.
    public func watchRelayCounters(relay: String) -> (
        events: CoreMetrics.Counter, invalid: CoreMetrics.Counter, signatureChecks: CoreMetrics.Counter
    ) {
        (
            Counter(label: "linkstr_watch_events_total", dimensions: [("relay", relay)], factory: factory),
            Counter(label: "linkstr_watch_invalid_events_total", dimensions: [("relay", relay)], factory: factory),
            Counter(label: "linkstr_watch_signature_checks_total", dimensions: [("relay", relay)], factory: factory)
        )
    }

    public func watchRecorded(duplicates: Int, queued: Int, coalesced: Int) {
        if duplicates > 0 { Counter(label: "linkstr_watch_duplicates_total", factory: factory).increment(by: duplicates) }
        Counter(label: "linkstr_watch_pushes_total", dimensions: [("kind", "queued")], factory: factory).increment(by: queued)
        Counter(label: "linkstr_watch_pushes_total", dimensions: [("kind", "coalesced")], factory: factory).increment(by: coalesced)
    }

    public func watchSubscriptionClosed() {
        Counter(label: "linkstr_watch_subscriptions_closed_total", factory: factory).increment()
    }

    public func watchRelayConnected(relay: String) {
        Counter(label: "linkstr_watch_relay_connections_total", dimensions: [("relay", relay)], factory: factory).increment()
    }

    public func watchRelayToQueueTimer() -> CoreMetrics.Timer {
        Timer(label: "linkstr_watch_relay_to_queue_seconds", factory: factory)
    }

    /// One relay's inbound rates (10-second averages) and whether its socket is being left unread
    /// now, as of a scrape.
    public func watchRelayTraffic(relay: String, eventsPerSecond: Double, invalidPerSecond: Double, readingPaused: Bool) {
        Gauge(label: "linkstr_watch_relay_events_per_second", dimensions: [("relay", relay)], factory: factory).record(eventsPerSecond)
        Gauge(label: "linkstr_watch_relay_invalid_per_second", dimensions: [("relay", relay)], factory: factory).record(invalidPerSecond)
        Gauge(label: "linkstr_watch_relay_reading_paused", dimensions: [("relay", relay)], factory: factory).record(readingPaused ? 1 : 0)
    }

    /// Whether the watcher's connection to `relay` is up (connected, subscriptions issued).
    public func watchRelayUp(relay: String, _ up: Bool) {
        Gauge(label: "linkstr_watch_relay_up", dimensions: [("relay", relay)], factory: factory).record(up ? 1 : 0)
    }

    /// Connections to `relay` closed because it broke a limit (`reason`: flood or invalid).
    public func watchRelayLimitDisconnects(relay: String, reason: String, count: Int) {
        guard count > 0 else { return }
        Counter(label: "linkstr_watch_relay_limit_disconnects_total", dimensions: [("relay", relay), ("reason", reason)], factory: factory)
            .increment(by: count)
    }

    /// Time the watcher left `relay`'s socket unread because its consumers were behind, and how
    /// often that made it ask for the subscriptions again; relay texts kept out of the log.
    public func watchRelayPauses(relay: String, pausedSeconds: Double, resubscribed: Int, suppressedLogLines: Int) {
        if pausedSeconds > 0 {
            FloatingPointCounter(label: "linkstr_watch_relay_read_paused_seconds_total", dimensions: [("relay", relay)], factory: factory)
                .increment(by: pausedSeconds)
        }
        if resubscribed > 0 {
            Counter(label: "linkstr_watch_relay_resubscribed_after_pause_total", dimensions: [("relay", relay)], factory: factory)
                .increment(by: resubscribed)
        }
        if suppressedLogLines > 0 {
            Counter(label: "linkstr_watch_relay_log_lines_suppressed_total", dimensions: [("relay", relay)], factory: factory)
                .increment(by: suppressedLogLines)
        }
    }

    /// Sightings waiting to be recorded (bounded: `WatchSettings.sightingBufferLimit` per lane).
    public func watchPendingWraps(_ count: Int) {
        Gauge(label: "linkstr_watch_pending_wraps", factory: factory).record(count)
    }

    /// Users' own relays (beyond `RELAYS`) by state, and the users who name any.
    public func watchUserRelays(_ counts: [String: Int], users: Int) {
        for (state, count) in counts {
            Gauge(label: "linkstr_watch_user_relays", dimensions: [("state", state)], factory: factory).record(count)
        }
        Gauge(label: "linkstr_watch_users_with_own_relays", factory: factory).record(users)
    }

    /// The inbox relay's open connections and subscriptions on this instance.
    public func inboxOpen(connections: Int, subscriptions: Int) {
        Gauge(label: "linkstr_inbox_connections", factory: factory).record(connections)
        Gauge(label: "linkstr_inbox_subscriptions", factory: factory).record(subscriptions)
    }

    /// What became of an EVENT sent to the inbox relay: stored, duplicate, unregistered, invalid,
    /// rate_limited, vanish.
    public func inboxEvent(outcome: String) {
        Counter(label: "linkstr_inbox_events_total", dimensions: [("outcome", outcome)], factory: factory).increment()
    }

    /// Connections refused because their address had `INBOX_MAX_CONNECTIONS_PER_IP` open.
    public func inboxConnectionRefused() {
        Counter(label: "linkstr_inbox_connections_refused_total", factory: factory).increment()
    }

    public func watchState(pubkeys: Int, shards: Int) {
        Gauge(label: "linkstr_watch_pubkeys", factory: factory).record(pubkeys)
        Gauge(label: "linkstr_watch_shards", factory: factory).record(shards)
    }

    /// Runs `hook` before every scrape (values that are cheaper to read than to track).
    public func onScrape(_ hook: @escaping @Sendable () async -> Void) {
        scrapeHooks.withLock { $0.append(hook) }
    }

    /// The Prometheus text exposition, after the scrape hooks ran.
    public func exposition() async -> [UInt8] {
        for hook in scrapeHooks.withLock({ $0 }) { await hook() }
        return registry.emitToBuffer()
    }
}
