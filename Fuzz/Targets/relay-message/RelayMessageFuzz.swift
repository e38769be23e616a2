import NostrProtocol

/// Both message parsers on arbitrary text: `RelayMessage` (what a relay sends us) and
/// `ClientMessage` (what an inbox relay reads). Each reads an EVENT as the general `JSONValue`
/// route does, and whatever either accepts must write out and parse back to the same message.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)

    // Both read an EVENT without a JSON tree where they can: they must make of any text what the
    // general route (`JSONValue`, then `NostrEvent(jsonValue:)`) makes of it.
    let items = (try? JSONValue(parsing: text))?.arrayValue ?? []
    let isEvent = items.first == "EVENT"
    let generalClientEvent = isEvent && items.count == 2 ? try? NostrEvent(jsonValue: items[1]) : nil
    var generalRelayEvent: NostrEvent?
    if isEvent, items.count == 3, let id = items[1].stringValue, !id.isEmpty, id.count <= 64 {
        generalRelayEvent = try? NostrEvent(jsonValue: items[2])
    }
    var clientEvent: NostrEvent?
    if case .event(let event)? = try? ClientMessage(json: text) { clientEvent = event }
    var relayEvent: NostrEvent?
    if case .event(_, let event)? = try? RelayMessage(json: text) { relayEvent = event }
    guard clientEvent == generalClientEvent else { fatalError("ClientMessage and the general route disagree on: \(text)") }
    guard relayEvent == generalRelayEvent else { fatalError("RelayMessage and the general route disagree on: \(text)") }

    if let message = try? RelayMessage(json: text) {
        let written = message.json
        guard let again = try? RelayMessage(json: written) else { fatalError("RelayMessage output does not parse: \(written)") }
        guard again == message else { fatalError("RelayMessage round trip changed the message: \(written)") }
        switch message {
        case .ok(_, _, let reason), .closed(_, let reason): _ = RelayMessage.prefix(of: reason)
        default: break
        }
    }

    if let message = try? ClientMessage(json: text) {
        let written = message.json
        guard let again = try? ClientMessage(json: written) else { fatalError("ClientMessage output does not parse: \(written)") }
        guard again == message else { fatalError("ClientMessage round trip changed the message: \(written)") }
    }
    return 0
}
