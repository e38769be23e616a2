import Foundation
import Logging
import NostrProtocol
import WSCore

/// One client connection to the inbox relay: a NIP-42 challenge on connect, EVENTs judged and
/// stored (and pushed), REQs served from storage then live to the recipient who proved their key,
/// within the connection's limits. Messages are handled one at a time in arrival order, except
/// that a wrap's OK comes when its batch is stored, after later messages may have been answered;
/// what the relay sends goes through one bounded queue, and a client that lets it fill is
/// disconnected.
final class InboxRelaySession: Sendable {
    struct State {
        var authenticated: String?
        var subscriptions: [String: InboxQuery] = [:]
    }

    let relay: InboxRelay
    /// The client's address key (an IPv6 client by its /64), for the per-address EVENT limit.
    let address: String
    let challenge = Hex.encode((0..<16).map { _ in UInt8.random(in: 0...255) })
    let token = UUID()
    let state: Locked<State>
    /// This connection's messages: `INBOX_EVENTS_PER_SECOND`, in bursts of twice that.
    let messages: RateLimiter
    let outbound: AsyncStream<String>.Continuation
    private let queued: AsyncStream<String>
    /// Set when the client stopped reading and the queue overflowed.
    let overflowed = Locked(false)
    /// Bytes queued for the client and not yet written.
    let pendingBytes = Locked(0)

    /// Messages waiting to be written before the client counts as not reading.
    static let outboundLimit = 1_000
    /// Bytes waiting to be written before the client counts as not reading. Stored events are
    /// queued only while less than half of it waits, so a reader of a full inbox is paced, not cut.
    static let outboundBytes = 4 << 20

    init(relay: InboxRelay, address: String) {
        self.relay = relay
        self.address = address
        self.state = Locked(State())
        let rate = Double(relay.settings.eventsPerSecond)
        self.messages = RateLimiter(limit: .init(perSecond: rate, burst: rate * 2), maxKeys: 2)
        (queued, outbound) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingOldest(Self.outboundLimit))
    }

    /// Serves the connection until the client leaves, breaks a limit, or the service stops.
    func serve(inbound: WebSocketInboundStream, writer: WebSocketOutboundWriter) async throws {
        defer {
            outbound.finish()
            if let recipient = state.withLock({ $0.authenticated }) { relay.subscribers.remove(recipient, token) }
            relay.count(subscriptions: -state.withLock { $0.subscriptions.count })
        }
        send(RelayMessage.auth(challenge: challenge).json)
        try await withThrowingTaskGroup(of: Void.self) { group in
            let queued = self.queued
            group.addTask {
                for await text in queued {
                    try await writer.writeTextMessage(text)
                    self.pendingBytes.withLock { $0 -= text.utf8.count }
                }
            }
            group.addTask {
                // A client that stopped reading: the connection ends here, whatever the writer and
                // the reader are waiting for.
                while !self.overflowed.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(100)) }
                throw InboxSessionError.slowReader
            }
            group.addTask {
                for try await message in inbound.messages(maxSize: InboxRelaySettings.maxMessageBytes) {
                    guard case .text(let text) = message else {
                        self.send(RelayMessage.notice("invalid: binary messages are not Nostr").json)
                        continue
                    }
                    try await self.handle(text)
                }
            }
            _ = try await group.next()
            group.cancelAll()
        }
    }

    /// Queues `text` for the client; a full queue ends the connection.
    func send(_ text: String) {
        let pending = pendingBytes.withLock { pending in
            pending += text.utf8.count
            return pending
        }
        if pending > Self.outboundBytes {
            overflow()
            return
        }
        if case .dropped = outbound.yield(text) { overflow() }
    }

    private func overflow() {
        overflowed.withLock { $0 = true }
        outbound.finish()
    }

    /// Waits until less than half the byte budget is queued (or the connection is over); a
    /// client that reads nothing for `readTimeout` counts as not reading.
    private func waitForRoom() async {
        let deadline = ContinuousClock.now + Self.readTimeout
        while pendingBytes.withLock({ $0 }) > Self.outboundBytes / 2, !overflowed.withLock({ $0 }), !Task.isCancelled {
            if ContinuousClock.now > deadline {
                overflow()
                return
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// How long a client may leave half the byte budget unread while stored events wait.
    static let readTimeout: Duration = .seconds(30)

    private func handle(_ text: String) async throws {
        if overflowed.withLock({ $0 }) { throw InboxSessionError.slowReader }
        let message: ClientMessage
        do { message = try ClientMessage(json: text) } catch {
            send(RelayMessage.notice("invalid: not a Nostr client message").json)
            return
        }
        // Every message costs a token (REQs and AUTHs cost the database and a signature check too);
        // EVENTs also count against the client's address.
        guard messages.take("connection") == nil else {
            relay.metrics.inboxEvent(outcome: "rate_limited")
            switch message {
            case .event(let event), .auth(let event):
                send(RelayMessage.ok(eventID: event.id, accepted: false, message: "rate-limited: slow down").json)
            case .req(let id, _):
                send(RelayMessage.closed(subscriptionID: String(id.prefix(64)), message: "rate-limited: slow down").json)
            case .close: break
            }
            return
        }
        switch message {
        case .event(let event): await receive(event, size: text.utf8.count)
        case .req(let id, let filters): await subscribe(id, filters)
        case .close(let id):
            let removed = state.withLock { $0.subscriptions.removeValue(forKey: id) != nil }
            if removed { relay.count(subscriptions: -1) }
        case .auth(let event): authenticate(event)
        }
    }

    private func authenticate(_ event: NostrEvent) {
        guard let relayURL = relay.settings.relayURL else { return }
        if let refusal = RelayAuthEvent.refusal(of: event, challenge: challenge, relayURL: relayURL) {
            send(RelayMessage.ok(eventID: event.id, accepted: false, message: "auth-required: \(refusal)").json)
            return
        }
        let pubkey = event.pubkey.hex
        let previous = state.withLock { state in
            defer { state.authenticated = pubkey }
            return state.authenticated
        }
        if let previous, previous != pubkey {
            relay.subscribers.remove(previous, token)
            let dropped = state.withLock { state in
                defer { state.subscriptions.removeAll() }
                return state.subscriptions.count
            }
            relay.count(subscriptions: -dropped)
        }
        relay.subscribers.add(pubkey, token) { [weak self] recipient, id, createdAt, json in
            self?.deliverLive(recipient, id, createdAt, json)
        }
        send(RelayMessage.ok(eventID: event.id, accepted: true, message: "").json)
    }

    private func receive(_ event: NostrEvent, size: Int) async {
        guard relay.eventsPerAddress.take(address) == nil else {
            relay.metrics.inboxEvent(outcome: "rate_limited")
            send(RelayMessage.ok(eventID: event.id, accepted: false, message: "rate-limited: slow down").json)
            return
        }
        guard let relayURL = relay.settings.relayURL else { return }
        switch InboxEventCheck.judge(event, size: size, relayURL: relayURL) {
        case .refuse(let reason):
            relay.metrics.inboxEvent(outcome: "invalid")
            send(RelayMessage.ok(eventID: event.id, accepted: false, message: reason).json)
        case .vanish(let pubkey, let until):
            do {
                let removed = try await relay.store.vanish(pubkey, until: until)
                relay.metrics.inboxEvent(outcome: "vanish")
                relay.logger.info("inbox recipient vanished", metadata: ["nostr.pubkey": "\(pubkey)", "inbox.wraps": "\(removed)"])
                send(RelayMessage.ok(eventID: event.id, accepted: true, message: "").json)
            } catch {
                send(RelayMessage.ok(eventID: event.id, accepted: false, message: "error: could not delete, try again").json)
            }
        case .wrap(let recipient):
            await store(event, recipient: recipient)
        }
    }

    /// Hands the wrap to the relay's store loop; its OK goes out once its batch is stored.
    private func store(_ event: NostrEvent, recipient: String) async {
        let handed = await relay.pendingWraps.send(InboxRelay.PendingWrap(event: event, recipient: recipient) { self.answer(event.id, $0) })
        if !handed { send(RelayMessage.ok(eventID: event.id, accepted: false, message: "error: the relay is shutting down").json) }
    }

    /// The OK for a wrap handed over to be stored (nil: it could not be).
    private func answer(_ id: EventID, _ outcome: InboxStore.StoreOutcome?) {
        guard let outcome else {
            send(RelayMessage.ok(eventID: id, accepted: false, message: "error: could not store, try again").json)
            return
        }
        relay.metrics.inboxEvent(outcome: outcome.metricLabel)
        switch outcome {
        case .unregistered:
            send(RelayMessage.ok(eventID: id, accepted: false, message: "restricted: no device is registered for this recipient").json)
        case .full:
            send(RelayMessage.ok(eventID: id, accepted: false, message: "rate-limited: this recipient's inbox is full").json)
        case .duplicate:
            send(RelayMessage.ok(eventID: id, accepted: true, message: "duplicate: already have this event").json)
        case .stored:
            send(RelayMessage.ok(eventID: id, accepted: true, message: "").json)
        }
    }

    private func subscribe(_ id: String, _ filters: [Filter]) async {
        let (authenticated, count, exists) = state.withLock { ($0.authenticated, $0.subscriptions.count, $0.subscriptions[id] != nil) }
        guard id.utf8.count <= 64 else {
            send(RelayMessage.closed(subscriptionID: String(id.prefix(64)), message: "invalid: subscription ids are at most 64 bytes").json)
            return
        }
        guard exists || count < relay.settings.maxSubscriptions else {
            send(
                RelayMessage.closed(
                    subscriptionID: id, message: "rate-limited: at most \(relay.settings.maxSubscriptions) subscriptions per connection"
                ).json)
            return
        }
        let query: InboxQuery
        switch InboxQuery.parse(filters, authenticated: authenticated) {
        case .failure(let refusal):
            if exists { closeSubscription(id) }
            send(RelayMessage.closed(subscriptionID: id, message: refusal.message).json)
            return
        case .success(let parsed): query = parsed
        }
        // Live from now on, before the stored ones are read: a wrap stored meanwhile may come
        // twice (clients drop a duplicate id), never not at all.
        state.withLock { $0.subscriptions[id] = query }
        if !exists { relay.count(subscriptions: 1) }
        do {
            try await sendStored(query, subscription: id)
            send(RelayMessage.eose(subscriptionID: id).json)
        } catch {
            closeSubscription(id)
            send(RelayMessage.closed(subscriptionID: id, message: "error: could not read stored events, try again").json)
        }
    }

    /// The stored wraps `query` selects, each once, read a page at a time and queued only while
    /// the client keeps reading: however many a REQ asks for, one page is held at once.
    private func sendStored(_ query: InboxQuery, subscription id: String) async throws {
        let prefix = #"["EVENT",\#(JSONValue.string(id).serialized),"#
        var sent = Set<String>()
        for part in query.parts where part.limit > 0 {
            var cursor: InboxStore.Cursor?
            var count = 0
            repeat {
                let page = try await relay.store.page(
                    recipient: query.recipient, part, after: cursor, size: min(Self.pageSize, part.limit - count))
                for wrap in page.wraps where sent.insert(wrap.id).inserted {
                    await waitForRoom()
                    if overflowed.withLock({ $0 }) { return }
                    send(prefix + wrap.event + "]")
                }
                count += page.wraps.count
                cursor = page.next
            } while cursor != nil && count < part.limit
        }
    }

    static let pageSize = 50

    private func closeSubscription(_ id: String) {
        if state.withLock({ $0.subscriptions.removeValue(forKey: id) != nil }) { relay.count(subscriptions: -1) }
    }

    /// A wrap stored for `recipient`: sent to every subscription it matches (each names the
    /// recipient the connection proved when it was made).
    private func deliverLive(_ recipient: String, _ id: String, _ createdAt: Int64, _ json: String) {
        let matching = state.withLock { state in
            state.subscriptions.filter { $0.value.matches(id: id, recipient: recipient, createdAt: createdAt) }.keys
        }
        for subscription in matching { send(#"["EVENT",\#(JSONValue.string(subscription).serialized),\#(json)]"#) }
    }
}

enum InboxSessionError: Error {
    /// The client let the relay's queue to it fill.
    case slowReader
}
