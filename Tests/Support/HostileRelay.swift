import NIOCore
import NIOHTTP1
import NIOPosix
public import NIOSSL
import NIOWebSocket
public import NostrProtocol

/// A scriptable Nostr relay on loopback, for tests of what a client does with a relay that does
/// not play fair. Left alone it is a plain store-and-forward relay: a REQ gets the stored events
/// its filters match, then EOSE, then matching events as they are published. A script can make a
/// connection flood its subscription after EOSE (valid wraps, junk, forged signatures, NOTICEs
/// full of control characters, CLOSEDs) at a chosen rate, stop reading what the client sends, and
/// choose what happens when the client stops reading: wait (TCP backpressure), hang up on it, or
/// drop what it cannot send at once, as real relays do.
///
/// Written on SwiftNIO's WebSocket codec with an event loop of its own, so a flood in the test
/// process does not slow the test's HTTP client, and a flood writes only what the socket takes.
public final class HostileRelay: Sendable {
    /// What a connection does when the client leaves its socket unwritable.
    public enum SlowReader: Sendable, Equatable {
        /// Writes no more until the socket takes data again (TCP backpressure; nothing lost).
        case wait
        /// Closes the connection, throwing away what was queued, once the socket has been
        /// unwritable this long, like a relay that gives up on slow clients.
        case disconnect(after: Duration)
        /// Keeps the connection but drops every published event it cannot write at once, like a
        /// relay whose broadcast queue lags behind; a flood waits instead.
        case dropEvents
    }

    /// What a connection sends after EOSE of its first REQ, to the latest subscription.
    public struct Flood: Sendable {
        public enum Item: Sendable {
            /// `["EVENT", <subscription>, <json>]`, `json` being an event object as text.
            case event(String)
            /// A whole relay message, sent as it is (a NOTICE, garbage).
            case message(String)
            /// `["CLOSED", <subscription>, <reason>]`.
            case closed(String)
        }

        public var items: [Item]
        /// Messages in all, cycling through `items`; nil: until the connection ends.
        public var total: Int?
        /// nil: as fast as the socket takes them.
        public var perSecond: Int?

        public init(items: [Item], total: Int? = nil, perSecond: Int? = nil) {
            self.items = items
            self.total = total
            self.perSecond = perSecond
        }
    }

    /// How one connection behaves, chosen at its first REQ by the order of first REQs (from 1):
    /// a connection the client opens and drops without subscribing does not shift the scripts.
    public struct Script: Sendable {
        public var flood: Flood?
        public var slowReader: SlowReader
        /// After the first REQ, read nothing more from the client (its pings, REQs, close).
        public var stopReading: Bool

        public init(flood: Flood? = nil, slowReader: SlowReader = .wait, stopReading: Bool = false) {
            self.flood = flood
            self.slowReader = slowReader
            self.stopReading = stopReading
        }
    }

    /// What happened on one connection.
    public struct Record: Sendable {
        public var number: Int
        /// Its place in the order of first REQs (from 1), which chose its script; nil before a REQ.
        public var subscriber: Int?
        public var opened: ContinuousClock.Instant
        /// The `Host` header of the WebSocket upgrade request.
        public var host: String?
        public var closed: ContinuousClock.Instant?
        /// REQs received.
        public var requests = 0
        /// The `since` of each gift-wrap filter the REQs carried, in order (nil: none asked).
        public var giftWrapSinces: [Int64?] = []
        /// Flood messages written.
        public var flooded = 0
        /// Published events dropped because the socket was unwritable (`SlowReader.dropEvents`).
        public var dropped = 0
        /// Closed by the relay because the client did not read (`SlowReader.disconnect`).
        public var closedAsSlow = false
        /// The client is not reading: the socket takes no more data now.
        public var stalled = false
    }

    private struct State {
        var stored: [NostrEvent] = []
        var records: [Record] = []
        var subscribers = 0
        var handlers: [Int: NIOLoopBound<ConnectionHandler>] = [:]
        var server: (any Channel)?
    }

    public let port: Int
    public var url: String { "\(tls == nil ? "ws" : "wss")://127.0.0.1:\(port)" }
    private let script: @Sendable (Int) -> Script
    private let state = Locked(State())
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// Behaves as a NIP-17 DM inbox: every connection is sent an AUTH challenge, and a REQ for
    /// gift wraps is served only to a connection authenticated as the one pubkey its `#p` names;
    /// any other is answered `CLOSED "auth-required: …"`.
    public let servesOnlyRecipients: Bool
    /// When set, every REQ for gift wraps is answered `CLOSED` with this text, as a relay that
    /// keeps DMs from strangers answers (`"restricted: …"`).
    public let closesGiftWrapRequests: String?

    /// How an EVENT is answered. It is stored and sent to subscriptions either way.
    public enum EventAnswer: Sendable, Equatable {
        /// `OK true` at once.
        case accept
        /// `OK true` after a while, as a slow relay does.
        case acceptAfter(Duration)
        /// `OK false` with this text, at once.
        case refuse(String)
        /// Never answered, as a relay that swallows what it is sent.
        case never
    }
    public let answersEvents: EventAnswer

    /// Serves `wss` with this; nil: plain `ws`.
    private let tls: NIOSSLContext?

    public init(
        servesOnlyRecipients: Bool = false, closesGiftWrapRequests: String? = nil, answersEvents: EventAnswer = .accept,
        tls: TLSConfiguration? = nil, script: @escaping @Sendable (_ subscriber: Int) -> Script = { _ in Script() }
    ) throws {
        self.tls = try tls.map { try NIOSSLContext(configuration: $0) }
        self.script = script
        self.servesOnlyRecipients = servesOnlyRecipients
        self.closesGiftWrapRequests = closesGiftWrapRequests
        self.answersEvents = answersEvents
        port = try LoopbackPort.free()
    }

    /// The ids of the events stored so far, published or sent by clients, in order.
    public var storedIDs: [EventID] { state.withLock { $0.stored.map(\.id) } }

    /// Every connection so far, in order.
    public var records: [Record] { state.withLock { $0.records } }

    /// The connections that sent a REQ, in the order of their first REQ: the ones scripts go to.
    public var subscribers: [Record] {
        state.withLock { $0.records.filter { $0.subscriber != nil }.sorted { $0.subscriber! < $1.subscriber! } }
    }

    /// Listens on `port`.
    public func start() async throws {
        let relay = self
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: 1 << 20,
            shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture(HTTPHeaders()) },
            upgradePipelineHandler: { channel, head in
                channel.eventLoop.makeCompletedFuture {
                    let handler = relay.open(channel, host: head.headers.first(name: "Host"))
                    try channel.pipeline.syncOperations.addHandlers(
                        NIOWebSocketFrameAggregator(
                            minNonFinalFragmentSize: 1, maxAccumulatedFrameCount: 64, maxAccumulatedFrameSize: 1 << 20),
                        handler)
                }
            })
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { [tls] channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        state.withLock { $0.server = server }
    }

    /// Closes the listener and every connection, and stops the event loop.
    public func stop() async {
        let (server, handlers) = state.withLock { state in
            defer {
                state.server = nil
                state.handlers.removeAll()
            }
            return (state.server, Array(state.handlers.values))
        }
        try? await server?.close()
        await Self.close(handlers)
        try? await group.shutdownGracefully()
    }

    /// Closes every open connection and keeps listening, as a relay that restarts.
    public func dropConnections() async {
        await Self.close(state.withLock { Array($0.handlers.values) })
    }

    private static func close(_ handlers: [NIOLoopBound<ConnectionHandler>]) async {
        for handler in handlers {
            try? await handler.eventLoop.submit { handler.value.close() }.get()
        }
    }

    /// Stores `event` and sends it to every subscription it matches.
    public func publish(_ event: NostrEvent) {
        let handlers = state.withLock { state in
            state.stored.append(event)
            return Array(state.handlers.values)
        }
        for handler in handlers { handler.eventLoop.execute { handler.value.forward(event) } }
    }

    /// Starts `flood` now on every open connection that has a subscription, with `slowReader`;
    /// `stopReading`: read nothing more from those clients.
    public func flood(_ flood: Flood, slowReader: SlowReader = .wait, stopReading: Bool = false) {
        for handler in state.withLock({ Array($0.handlers.values) }) {
            handler.eventLoop.execute {
                if stopReading { handler.value.stopReading() }
                handler.value.start(flood, slowReader: slowReader)
            }
        }
    }

    /// Ends every flood now.
    public func stopFlooding() {
        for handler in state.withLock({ Array($0.handlers.values) }) {
            handler.eventLoop.execute { handler.value.flood = nil }
        }
    }

    // MARK: Connections

    private func open(_ channel: any Channel, host: String?) -> ConnectionHandler {
        let number = state.withLock { state in
            state.records.append(Record(number: state.records.count + 1, opened: .now, host: host))
            return state.records.count
        }
        let handler = ConnectionHandler(relay: self, number: number)
        state.withLock { $0.handlers[number] = NIOLoopBound(handler, eventLoop: channel.eventLoop) }
        return handler
    }

    /// The script of connection `number`, which has just sent its first REQ.
    fileprivate func firstRequest(_ number: Int) -> Script {
        let subscriber = state.withLock { state in
            state.subscribers += 1
            state.records[number - 1].subscriber = state.subscribers
            return state.subscribers
        }
        return script(subscriber)
    }

    fileprivate func update(_ number: Int, _ change: (inout Record) -> Void) {
        state.withLock { state in change(&state.records[number - 1]) }
    }

    fileprivate func closed(_ number: Int) {
        state.withLock { state in
            state.handlers[number] = nil
            state.records[number - 1].closed = .now
        }
    }

    fileprivate func stored(matching filters: [Filter]) -> [NostrEvent] {
        state.withLock { state in state.stored.filter { event in filters.contains { $0.matches(event) } } }
    }

    /// One client connection after the upgrade, confined to its event loop.
    private final class ConnectionHandler: ChannelInboundHandler {
        typealias InboundIn = WebSocketFrame
        typealias OutboundOut = WebSocketFrame

        let relay: HostileRelay
        let number: Int
        var context: ChannelHandlerContext?
        var subscriptions: [String: [Filter]] = [:]
        /// The latest subscription, which a flood goes to.
        var latest: String?
        var slowReader = SlowReader.wait
        var flood: Flood?
        /// The flood's messages as they go out to `latest`, made once per subscription: a relay
        /// that builds every frame anew is slower than the client it means to overwhelm.
        var frames: (subscription: String, buffers: [ByteBuffer])?
        var floodStarted: NIODeadline?
        var flooded = 0
        var unwritableSince: NIODeadline?
        var ticking = false
        var requested = false
        let challenge = String(UInt64.random(in: 0...UInt64.max), radix: 16)
        var challenged = false
        /// The pubkey an accepted AUTH proved (`servesOnlyRecipients`).
        var authenticated: String?

        init(relay: HostileRelay, number: Int) {
            self.relay = relay
            self.number = number
        }

        func handlerAdded(context: ChannelHandlerContext) { self.context = context }

        func handlerRemoved(context: ChannelHandlerContext) {
            self.context = nil
            relay.closed(number)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            switch frame.opcode {
            case .text:
                receive(String(buffer: frame.unmaskedData))
            case .ping:
                write(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData))
                context.flush()
            case .connectionClose:
                var data = frame.unmaskedData
                let code = data.readSlice(length: 2) ?? ByteBuffer()
                context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: code)), promise: nil)
                context.close(promise: nil)
            default:
                break
            }
        }

        func channelWritabilityChanged(context: ChannelHandlerContext) {
            let writable = context.channel.isWritable
            if writable { unwritableSince = nil }
            relay.update(number) { $0.stalled = !writable }
            context.fireChannelWritabilityChanged()
        }

        private func receive(_ text: String) {
            guard let context, let message = try? ClientMessage(json: text) else { return }
            // The challenge goes out with the first answer, so it never races the upgrade.
            if relay.servesOnlyRecipients, !challenged {
                challenged = true
                send(#"["AUTH",\#(quoted(challenge))]"#)
            }
            switch message {
            case .req(let id, let filters):
                let first = !requested
                requested = true
                relay.update(number) { record in
                    record.requests += 1
                    record.giftWrapSinces += filters.filter { $0.kinds?.contains(EventKind.giftWrap) == true }.map(\.since)
                }
                if let text = relay.closesGiftWrapRequests, filters.contains(where: { $0.kinds?.contains(EventKind.giftWrap) == true }) {
                    send(#"["CLOSED",\#(quoted(id)),\#(quoted(text))]"#)
                    context.flush()
                    return
                }
                if relay.servesOnlyRecipients, let authenticated = authenticated.map({ [$0] }) ?? .some([]),
                    filters.contains(where: { $0.kinds?.contains(EventKind.giftWrap) == true && $0.tags["p"] != authenticated })
                {
                    send(#"["CLOSED",\#(quoted(id)),"auth-required: this inbox serves gift wraps only to their recipient"]"#)
                    context.flush()
                    return
                }
                subscriptions[id] = filters
                latest = id
                for event in relay.stored(matching: filters) { send(#"["EVENT",\#(quoted(id)),\#(event.json)]"#) }
                send(#"["EOSE",\#(quoted(id))]"#)
                context.flush()
                if first {
                    let script = relay.firstRequest(number)
                    slowReader = script.slowReader
                    if script.stopReading { stopReading() }
                    if let flood = script.flood { start(flood, slowReader: script.slowReader) }
                }
            case .close(let id):
                subscriptions[id] = nil
            case .event(let event):
                let ok = #"["OK",\#(quoted(event.id.hex)),true,""]"#
                switch relay.answersEvents {
                case .accept:
                    send(ok)
                    context.flush()
                case .acceptAfter(let delay):
                    let (seconds, attoseconds) = delay.components
                    let wait = TimeAmount.nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
                    context.eventLoop.assumeIsolated().scheduleTask(in: wait) { [self] in
                        guard let context = self.context else { return }
                        self.send(ok)
                        context.flush()
                    }
                case .refuse(let text):
                    send(#"["OK",\#(quoted(event.id.hex)),false,\#(quoted(text))]"#)
                    context.flush()
                case .never:
                    break
                }
                relay.publish(event)
            case .auth(let event):
                let answersChallenge =
                    event.kind == 22242 && event.tags.contains { $0.count >= 2 && $0[0] == "challenge" && $0[1] == challenge }
                let valid = answersChallenge && (try? event.verify()) != nil
                if valid { authenticated = event.pubkey.hex }
                send(#"["OK",\#(quoted(event.id.hex)),\#(valid),\#(valid ? "\"\"" : "\"invalid: bad AUTH\"")]"#)
                context.flush()
            }
        }

        func start(_ flood: Flood, slowReader: SlowReader) {
            guard latest != nil, !flood.items.isEmpty else { return }
            self.flood = flood
            self.slowReader = slowReader
            frames = nil
            flooded = 0
            floodStarted = .now()
            scheduleTick()
        }

        func forward(_ event: NostrEvent) {
            guard let context else { return }
            let matching = subscriptions.filter { $0.value.contains { $0.matches(event) } }.keys
            guard !matching.isEmpty else { return }
            if slowReader == .dropEvents, !context.channel.isWritable {
                relay.update(number) { $0.dropped += matching.count }
                return
            }
            for id in matching { send(#"["EVENT",\#(quoted(id)),\#(event.json)]"#) }
            context.flush()
        }

        func close() { context?.close(promise: nil) }

        func stopReading() {
            context?.channel.setOption(ChannelOptions.autoRead, value: false).whenComplete { _ in }
        }

        private func scheduleTick() {
            guard !ticking, let context else { return }
            ticking = true
            let delay: TimeAmount = flood?.perSecond == nil ? .milliseconds(1) : .milliseconds(10)
            context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
                ticking = false
                tick()
            }
        }

        /// Writes what the flood owes by now, as far as the socket takes it.
        private func tick() {
            guard let context, let flood, let latest, let floodStarted else { return }
            if let total = flood.total, flooded >= total {
                self.flood = nil
                return
            }
            var allowance = 512
            if let rate = flood.perSecond {
                let elapsed = Double((NIODeadline.now() - floodStarted).nanoseconds) / 1e9
                allowance = min(Int(elapsed * Double(rate)) + 1 - flooded, 4096)
            }
            if frames?.subscription != latest {
                frames = (
                    latest,
                    flood.items.map { item in
                        switch item {
                        case .event(let json): ByteBuffer(string: #"["EVENT",\#(quoted(latest)),\#(json)]"#)
                        case .message(let text): ByteBuffer(string: text)
                        case .closed(let reason): ByteBuffer(string: #"["CLOSED",\#(quoted(latest)),\#(quoted(reason))]"#)
                        }
                    }
                )
            }
            let buffers = frames?.buffers ?? []
            while allowance > 0, flood.total.map({ flooded < $0 }) ?? true {
                guard context.channel.isWritable else {
                    let since = unwritableSince ?? .now()
                    unwritableSince = since
                    if case .disconnect(let after) = slowReader,
                        NIODeadline.now() - since
                            >= .nanoseconds(
                                Int64(
                                    after.components.seconds * 1_000_000_000
                                        + after.components.attoseconds / 1_000_000_000))
                    {
                        relay.update(number) { $0.closedAsSlow = true }
                        context.close(promise: nil)
                        return
                    }
                    break
                }
                write(WebSocketFrame(fin: true, opcode: .text, data: buffers[flooded % buffers.count]))
                flooded += 1
                allowance -= 1
            }
            context.flush()
            let count = flooded
            relay.update(number) { $0.flooded = count }
            scheduleTick()
        }

        private func send(_ text: String) {
            write(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: text)))
        }

        private func write(_ frame: WebSocketFrame) {
            context?.write(wrapOutboundOut(frame), promise: nil)
        }

        private func quoted(_ text: String) -> String { JSONValue.string(text).serialized }
    }
}
