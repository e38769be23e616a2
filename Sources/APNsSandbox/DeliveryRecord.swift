public import NostrProtocol

/// One push request the sandbox answered: what arrived and what it said. Kept in memory for
/// `GET /deliveries` and appended as a JSON line to the deliveries file.
public struct DeliveryRecord: Sendable, Equatable {
    public var sequence: Int
    public var receivedAtMilliseconds: Int64
    public var status: Int
    public var reason: String?
    public var deviceToken: String
    public var topic: String?
    public var apnsID: String?
    public var pushType: String?
    public var priority: String?
    public var collapseID: String?
    public var expiration: String?
    /// The payload as sent (a JSON text).
    public var payload: String

    public var json: JSONValue {
        var fields: [String: JSONValue] = [
            "seq": .integer(Int64(sequence)), "received_at_ms": .integer(receivedAtMilliseconds), "status": .integer(Int64(status)),
            "device_token": .string(deviceToken),
        ]
        func put(_ key: String, _ value: String?) { if let value { fields[key] = .string(value) } }
        put("reason", reason)
        put("apns_topic", topic)
        put("apns_id", apnsID)
        put("apns_push_type", pushType)
        put("apns_priority", priority)
        put("apns_collapse_id", collapseID)
        put("apns_expiration", expiration)
        // Embedded as JSON when it is JSON, so consumers read fields without a second parse.
        fields["payload"] = (try? JSONValue(parsing: payload)) ?? .string(payload)
        return .object(fields)
    }
}
