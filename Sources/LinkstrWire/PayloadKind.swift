/// What a linkstr message does (`kind` in the payload, docs/linkstr-wire.md §2).
public enum PayloadKind: String, Sendable, Hashable, CaseIterable {
    case root
    case rootDelete = "root_delete"
    case sessionCreate = "session_create"
    case sessionMembers = "session_members"
    case sessionDelete = "session_delete"
    case reaction

    /// `reaction` and `root_delete` rumors carry `["e", root_id, "", "root"]`; the others no tag.
    public var referencesRoot: Bool { self == .reaction || self == .rootDelete }
}
