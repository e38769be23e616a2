/// The watermark a validated `root_delete` leaves (R9): the post is gone and history cannot bring
/// it back.
public struct PostDeletion: Sendable, Equatable {
    public var rootID: String
    public var sessionID: String
    public var deletedBy: String
    public var order: EventOrder

    public init(rootID: String, sessionID: String, deletedBy: String, order: EventOrder) {
        self.rootID = rootID
        self.sessionID = sessionID
        self.deletedBy = deletedBy
        self.order = order
    }
}
