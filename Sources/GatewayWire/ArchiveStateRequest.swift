/// `POST /v1/conversations/archive-state`: the caller's archived conversations, whole or within a
/// known scope.
public struct ArchiveStateRequest: Sendable, Equatable {
    /// Cleaned archived ids.
    public var archived: [String]
    /// nil: `archived` replaces the whole archive. Otherwise only these ids change.
    public var known: [String]?

    public static let maxIDs = 10_000

    public init(archived: [String], known: [String]? = nil) {
        self.archived = archived
        self.known = known
    }

    public static func parse(_ body: [UInt8]) throws(RequestBodyError) -> ArchiveStateRequest {
        let fields = try RequestFields(parsing: body)
        guard let archivedRaw = try fields.stringList("archived_conversation_ids") else {
            throw RequestBodyError("archived_conversation_ids is required")
        }
        let archived = archivedRaw.cleanedIDs()
        var known: [String]?
        if let knownRaw = try fields.stringList("known_conversation_ids") {
            guard !knownRaw.contains(where: \.isEmpty) else {
                throw RequestBodyError("known_conversation_ids must contain nonempty conversation IDs")
            }
            let cleaned = knownRaw.cleanedIDs()
            let scope = Set(cleaned)
            guard archived.allSatisfy(scope.contains) else {
                throw RequestBodyError("archived_conversation_ids must be within known_conversation_ids")
            }
            known = cleaned
        }
        guard archived.count <= maxIDs, (known?.count ?? 0) <= maxIDs else {
            throw RequestBodyError("at most \(maxIDs) conversation IDs per request")
        }
        return ArchiveStateRequest(archived: archived, known: known)
    }
}
