import NostrProtocol

/// Both message parsers on arbitrary text: `RelayMessage` (what a relay sends us) and
/// `ClientMessage` (what the test relay and load tools read). Whatever either accepts must
/// write out and parse back to the same message.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)

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
