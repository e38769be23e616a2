/// Messages a relay sends to a client (NIP-01, NIP-42).
public enum RelayMessage: Sendable, Hashable {
    case event(subscriptionID: String, event: NostrEvent)
    case ok(eventID: EventID, accepted: Bool, message: String)
    case eose(subscriptionID: String)
    case closed(subscriptionID: String, message: String)
    case notice(String)
    case auth(challenge: String)

    public init(json: String) throws(RelayMessageError) {
        // Nearly every message a watched relay sends is an EVENT: read it without the JSON tree.
        if let (subscriptionID, event) = EventReader.relayEvent(json) {
            self = .event(subscriptionID: subscriptionID, event: event)
            return
        }
        let items = try MessageArray.parse(json)
        let type = try MessageArray.type(items)
        switch type {
        case "EVENT":
            guard items.count == 3 else { throw .malformed("EVENT takes a subscription id and an event") }
            self = .event(subscriptionID: try MessageArray.subscriptionID(items[1]), event: try MessageArray.event(items[2]))
        case "OK":
            guard items.count == 4 else { throw .malformed("OK takes an event id, a bool and a message") }
            guard let id = try? EventID(hex: try MessageArray.string(items[1], "event id")) else {
                throw .malformed("OK event id must be 64-character hex")
            }
            guard case .bool(let accepted) = items[2] else { throw .malformed("OK status must be a boolean") }
            self = .ok(eventID: id, accepted: accepted, message: try MessageArray.string(items[3], "OK message"))
        case "EOSE":
            guard items.count == 2 else { throw .malformed("EOSE takes a subscription id") }
            self = .eose(subscriptionID: try MessageArray.subscriptionID(items[1]))
        case "CLOSED":
            guard items.count >= 2 else { throw .malformed("CLOSED takes a subscription id") }
            let message = items.count > 2 ? try MessageArray.string(items[2], "CLOSED message") : ""
            self = .closed(subscriptionID: try MessageArray.subscriptionID(items[1]), message: message)
        case "NOTICE":
            guard items.count == 2 else { throw .malformed("NOTICE takes a message") }
            self = .notice(try MessageArray.string(items[1], "NOTICE message"))
        case "AUTH":
            guard items.count == 2 else { throw .malformed("AUTH takes a challenge") }
            self = .auth(challenge: try MessageArray.string(items[1], "AUTH challenge"))
        default:
            throw .unknownType(type)
        }
    }

    public var json: String {
        var writer = JSONWriter()
        switch self {
        case .event(let id, let event):
            writer.raw("[\"EVENT\",")
            writer.string(id)
            writer.byte(UInt8(ascii: ","))
            writer.json(event.jsonBytes)
        case .ok(let id, let accepted, let message):
            writer.raw("[\"OK\",")
            writer.hexString(id.bytes)
            accepted ? writer.raw(",true,") : writer.raw(",false,")
            writer.string(message)
        case .eose(let id):
            writer.raw("[\"EOSE\",")
            writer.string(id)
        case .closed(let id, let message):
            writer.raw("[\"CLOSED\",")
            writer.string(id)
            writer.byte(UInt8(ascii: ","))
            writer.string(message)
        case .notice(let message):
            writer.raw("[\"NOTICE\",")
            writer.string(message)
        case .auth(let challenge):
            writer.raw("[\"AUTH\",")
            writer.string(challenge)
        }
        writer.byte(UInt8(ascii: "]"))
        return writer.string
    }

    /// The machine-readable prefix of an OK or CLOSED message (`auth-required`, `rate-limited`, …).
    public static func prefix(of message: String) -> MachineReadablePrefix? {
        guard let colon = message.firstIndex(of: ":") else { return nil }
        return MachineReadablePrefix(rawValue: String(message[..<colon]))
    }
}

/// The standard prefixes of OK/CLOSED messages (NIP-01, NIP-42).
public enum MachineReadablePrefix: String, Sendable, Hashable, CaseIterable {
    case duplicate, pow, blocked
    case rateLimited = "rate-limited"
    case invalid, restricted, mute, error
    case authRequired = "auth-required"
}
