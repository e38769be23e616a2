/// Messages a client sends to a relay (NIP-01, NIP-42).
public enum ClientMessage: Sendable, Hashable {
    case event(NostrEvent)
    case req(subscriptionID: String, filters: [Filter])
    case close(subscriptionID: String)
    case auth(NostrEvent)

    public var json: String {
        var writer = JSONWriter()
        switch self {
        case .event(let event):
            writer.raw("[\"EVENT\",")
            writer.json(event.jsonBytes)
        case .req(let id, let filters):
            writer.raw("[\"REQ\",")
            writer.string(id)
            for filter in filters {
                writer.byte(UInt8(ascii: ","))
                filter.write(to: &writer)
            }
        case .close(let id):
            writer.raw("[\"CLOSE\",")
            writer.string(id)
        case .auth(let event):
            writer.raw("[\"AUTH\",")
            writer.json(event.jsonBytes)
        }
        writer.byte(UInt8(ascii: "]"))
        return writer.string
    }

    public init(json: String) throws(RelayMessageError) {
        // Nearly every message an inbox relay reads is an EVENT: read it without the JSON tree.
        if let event = EventReader.clientEvent(json) {
            self = .event(event)
            return
        }
        let items = try MessageArray.parse(json)
        let type = try MessageArray.type(items)
        switch type {
        case "EVENT":
            guard items.count == 2 else { throw .malformed("EVENT takes one event") }
            self = .event(try MessageArray.event(items[1]))
        case "REQ":
            guard items.count >= 3 else { throw .malformed("REQ needs a subscription id and at least one filter") }
            let filters = try items[2...].map { (item) throws(RelayMessageError) in try Filter(jsonValue: item) }
            self = .req(subscriptionID: try MessageArray.subscriptionID(items[1]), filters: filters)
        case "CLOSE":
            guard items.count == 2 else { throw .malformed("CLOSE takes a subscription id") }
            self = .close(subscriptionID: try MessageArray.subscriptionID(items[1]))
        case "AUTH":
            guard items.count == 2 else { throw .malformed("AUTH takes one event") }
            self = .auth(try MessageArray.event(items[1]))
        default:
            throw .unknownType(type)
        }
    }
}

/// Shared helpers for reading `["TYPE", …]` arrays.
enum MessageArray {
    static func parse(_ json: String) throws(RelayMessageError) -> [JSONValue] {
        let value: JSONValue
        do { value = try JSONValue(parsing: json) } catch { throw .json(error) }
        guard case .array(let items) = value, !items.isEmpty else { throw .notAnArray }
        return items
    }

    static func type(_ items: [JSONValue]) throws(RelayMessageError) -> String {
        guard case .string(let type) = items[0] else { throw .malformed("first element must be the message type") }
        return type
    }

    static func subscriptionID(_ value: JSONValue) throws(RelayMessageError) -> String {
        guard case .string(let id) = value, !id.isEmpty, id.count <= 64 else {
            throw .malformed("subscription id must be a non-empty string of at most 64 characters")
        }
        return id
    }

    static func string(_ value: JSONValue, _ what: String) throws(RelayMessageError) -> String {
        guard case .string(let s) = value else { throw .malformed("\(what) must be a string") }
        return s
    }

    static func event(_ value: JSONValue) throws(RelayMessageError) -> NostrEvent {
        do { return try NostrEvent(jsonValue: value) } catch { throw .event(error) }
    }
}
