import NostrProtocol

/// `POST /v1/suppressions`: `{"event_ids": [wrap ids]}`, the caller's own self-copies, which the
/// relay watcher must not push to the caller's devices.
public struct SuppressionRequest: Sendable, Equatable {
    public var eventIDs: [String]

    public static let maxEventIDs = 500

    public init(eventIDs: [String]) { self.eventIDs = eventIDs }

    public static func parse(_ body: [UInt8]) throws(RequestBodyError) -> SuppressionRequest {
        let fields = try RequestFields(parsing: body)
        let ids = (try fields.stringList("event_ids") ?? []).map { $0.lowercased() }.cleanedIDs()
        guard !ids.isEmpty else { throw RequestBodyError("event_ids is required") }
        guard ids.count <= maxEventIDs else {
            throw RequestBodyError("event_ids has \(ids.count) entries; at most \(maxEventIDs) are accepted")
        }
        guard ids.allSatisfy({ Hex.decode($0, count: 32) != nil }) else {
            throw RequestBodyError("event_ids must be 64-character hex event ids")
        }
        return SuppressionRequest(eventIDs: ids)
    }
}
