import NostrProtocol

/// The APNs request for one queued job, exactly as the linkstr app expects it
/// (../shared/spec/linkstr-wire.md §4).
public struct APNsNotification: Sendable, Equatable {
    public var type: NotificationType
    public var eventID: String
    public var conversationID: String
    public var emoji: String?
    public var postID: String?

    public static let maxPayloadBytes = 4096
    public static let maxCollapseIDBytes = 64

    public init(type: NotificationType, eventID: String, conversationID: String, emoji: String? = nil, postID: String? = nil) {
        self.type = type
        self.eventID = eventID
        self.conversationID = conversationID
        self.emoji = emoji
        self.postID = postID
    }

    public var title: String {
        switch type {
        case .newPost: "New post in linkstr"
        case .newEmojiReaction: "New reaction \(emoji ?? "") in linkstr"
        }
    }

    /// `{"aps":{"alert":{"title","body"},"sound","thread-id"},"type","event_id","conversation_id","emoji"?,"post_id"?}`
    public var payload: String {
        var fields: [String: JSONValue] = [
            "aps": .object([
                "alert": .object(["title": .string(title), "body": "Open linkstr to view"]),
                "sound": "default",
                "thread-id": .string(conversationID),
            ]),
            "type": .string(type.rawValue),
            "event_id": .string(eventID),
            "conversation_id": .string(conversationID),
        ]
        if type == .newEmojiReaction {
            if let emoji { fields["emoji"] = .string(emoji) }
            if let postID { fields["post_id"] = .string(postID) }
        }
        return JSONValue.object(fields).serialized
    }

    /// `apns-collapse-id` is the event id, cut to Apple's 64-byte limit on a character boundary.
    public var collapseID: String {
        var result = ""
        for character in eventID {
            guard result.utf8.count + String(character).utf8.count <= Self.maxCollapseIDBytes else { break }
            result.append(character)
        }
        return result
    }

    /// Headers besides `authorization` and `apns-id`.
    public func headers(topic: String, expiration: Int64) -> [(String, String)] {
        [("apns-topic", topic), ("apns-push-type", "alert"), ("apns-priority", "10"),
         ("apns-collapse-id", collapseID), ("apns-expiration", String(expiration))]
    }
}
