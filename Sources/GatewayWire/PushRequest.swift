import NostrProtocol

/// `POST /v1/push`: a typed push (a new post or an emoji reaction) to the devices of up to
/// `maxRecipients` pubkeys.
public struct PushRequest: Sendable, Equatable {
    public var type: NotificationType
    public var eventID: String
    public var conversationID: String
    /// Cleaned, lowercased recipient pubkeys (the sender is removed later, by the store).
    public var recipients: [String]
    public var emoji: String?
    public var postID: String?
    /// `"push_type": "background"`: wake the app to refresh instead of showing an alert.
    public var background: Bool

    /// A push fans out to at most this many recipients; linkstr sessions are small groups, and
    /// a 64 KiB body cannot carry many more than 950 keys anyway.
    public static let maxRecipients = 500

    public init(
        type: NotificationType, eventID: String, conversationID: String, recipients: [String], emoji: String? = nil, postID: String? = nil,
        background: Bool = false
    ) {
        self.type = type
        self.eventID = eventID
        self.conversationID = conversationID
        self.recipients = recipients
        self.emoji = emoji
        self.postID = postID
        self.background = background
    }

    public static func parse(_ body: [UInt8]) throws(RequestBodyError) -> PushRequest {
        let fields = try RequestFields(parsing: body)
        guard let typeText = try fields.string("notification_type"), let type = NotificationType(rawValue: typeText), type != .giftWrap
        else {
            throw RequestBodyError("unsupported notification_type")
        }
        guard let eventID = try fields.string("event_id") else { throw RequestBodyError("event_id is required") }
        guard let conversationID = try fields.string("conversation_id") else { throw RequestBodyError("conversation_id is required") }
        let recipients = (try fields.stringList("recipient_pubkeys") ?? []).map { $0.lowercased() }.cleanedIDs()
        guard !recipients.isEmpty else { throw RequestBodyError("recipient_pubkeys is required") }
        guard recipients.count <= maxRecipients else {
            throw RequestBodyError("recipient_pubkeys has \(recipients.count) entries; at most \(maxRecipients) are accepted")
        }
        guard recipients.allSatisfy({ Hex.decode($0, count: 32) != nil }) else {
            throw RequestBodyError("recipient_pubkeys must be 64-character hex public keys")
        }
        let emoji = try fields.string("emoji")
        if type == .newEmojiReaction {
            guard let emoji else { throw RequestBodyError("emoji is required for new_emoji_reaction") }
            guard SingleEmoji.isSingleEmoji(emoji) else { throw RequestBodyError("emoji must be a single emoji") }
        }
        let postID = try fields.string("post_id")
        // Bounds that keep every APNs payload under Apple's 4096 bytes.
        guard eventID.utf8.count <= 128, conversationID.utf8.count <= 128, (emoji?.utf8.count ?? 0) <= 64, (postID?.utf8.count ?? 0) <= 128
        else {
            throw RequestBodyError("event_id, conversation_id and post_id are limited to 128 bytes, emoji to 64")
        }
        let background: Bool
        switch try fields.string("push_type") {
        case nil, "alert": background = false
        case "background":
            // A call that does not ring is not a call.
            guard !type.isCall else { throw RequestBodyError("incoming_call cannot be a background push") }
            background = true
        default: throw RequestBodyError("push_type must be alert or background")
        }
        return PushRequest(
            type: type, eventID: eventID, conversationID: conversationID, recipients: recipients,
            emoji: type == .newEmojiReaction ? emoji : nil, postID: type == .newEmojiReaction ? postID : nil, background: background)
    }
}
