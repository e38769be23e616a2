import NostrProtocol

/// The APNs environment a device token belongs to.
public enum APNsEnvironment: String, Sendable, Hashable, CaseIterable {
    case sandbox
    case production
}

/// Request bodies of the linkstr routes, parsed and validated as values (no I/O), with the
/// contract's messages. Each parse either returns a clean request or throws a 400.
public struct RegisterDeviceRequest: Sendable, Equatable {
    public var deviceToken: String
    public var environment: APNsEnvironment
    public var topic: String?
    public var relayWatch: Bool

    public static func parse(_ body: [UInt8]) throws(APIError) -> RegisterDeviceRequest {
        let fields = RequestFields(object: try JSONBody.parseObject(body))
        let token = try fields.string("device_token")
        let environmentText = try fields.string("apns_environment")
        guard let token, let environmentText else { throw .badRequest("device_token and apns_environment are required") }
        guard let environment = APNsEnvironment(rawValue: environmentText.lowercased()) else {
            throw .badRequest("apns_environment must be sandbox or production")
        }
        return RegisterDeviceRequest(
            deviceToken: try DeviceToken.validate(token), environment: environment,
            topic: try fields.string("topic"), relayWatch: try fields.bool("relay_watch") ?? false)
    }
}

public struct UnregisterDeviceRequest: Sendable, Equatable {
    public var deviceToken: String

    public static func parse(_ body: [UInt8]) throws(APIError) -> UnregisterDeviceRequest {
        let fields = RequestFields(object: try JSONBody.parseObject(body))
        guard let token = try fields.string("device_token") else { throw .badRequest("device_token is required") }
        return UnregisterDeviceRequest(deviceToken: try DeviceToken.validate(token))
    }
}

public struct ArchiveStateRequest: Sendable, Equatable {
    /// Cleaned archived ids.
    public var archived: [String]
    /// nil: `archived` replaces the whole archive. Otherwise only these ids change.
    public var known: [String]?

    public static let maxIDs = 10_000

    public static func parse(_ body: [UInt8]) throws(APIError) -> ArchiveStateRequest {
        let fields = RequestFields(object: try JSONBody.parseObject(body))
        guard let archivedRaw = try fields.stringList("archived_conversation_ids") else {
            throw .badRequest("archived_conversation_ids is required")
        }
        let archived = archivedRaw.cleanedIDs()
        var known: [String]?
        if let knownRaw = try fields.stringList("known_conversation_ids") {
            guard !knownRaw.contains(where: \.isEmpty) else { throw .badRequest("known_conversation_ids must contain nonempty conversation IDs") }
            let cleaned = knownRaw.cleanedIDs()
            let scope = Set(cleaned)
            guard archived.allSatisfy(scope.contains) else { throw .badRequest("archived_conversation_ids must be within known_conversation_ids") }
            known = cleaned
        }
        guard archived.count <= maxIDs, (known?.count ?? 0) <= maxIDs else {
            throw .badRequest("at most \(maxIDs) conversation IDs per request")
        }
        return ArchiveStateRequest(archived: archived, known: known)
    }
}

public enum NotificationType: String, Sendable, Hashable {
    case newPost = "new_post"
    case newEmojiReaction = "new_emoji_reaction"
    /// The relay watcher's generic alert; never accepted from `POST /v1/push`.
    case giftWrap = "gift_wrap"
}

public struct PushRequest: Sendable, Equatable {
    public var type: NotificationType
    public var eventID: String
    public var conversationID: String
    /// Cleaned, lowercased recipient pubkeys (the sender is removed later, by the store).
    public var recipients: [String]
    public var emoji: String?
    public var postID: String?

    /// A push fans out to at most this many recipients; linkstr sessions are small groups, and
    /// a 64 KiB body cannot carry many more than 950 keys anyway.
    public static let maxRecipients = 500

    public static func parse(_ body: [UInt8]) throws(APIError) -> PushRequest {
        let fields = RequestFields(object: try JSONBody.parseObject(body))
        guard let typeText = try fields.string("notification_type"), let type = NotificationType(rawValue: typeText), type != .giftWrap else {
            throw .badRequest("unsupported notification_type")
        }
        guard let eventID = try fields.string("event_id") else { throw .badRequest("event_id is required") }
        guard let conversationID = try fields.string("conversation_id") else { throw .badRequest("conversation_id is required") }
        let recipients = (try fields.stringList("recipient_pubkeys") ?? []).map { $0.lowercased() }.cleanedIDs()
        guard !recipients.isEmpty else { throw .badRequest("recipient_pubkeys is required") }
        guard recipients.count <= maxRecipients else {
            throw .badRequest("recipient_pubkeys has \(recipients.count) entries; at most \(maxRecipients) are accepted")
        }
        guard recipients.allSatisfy({ Hex.decode($0, count: 32) != nil }) else {
            throw .badRequest("recipient_pubkeys must be 64-character hex public keys")
        }
        let emoji = try fields.string("emoji")
        if type == .newEmojiReaction {
            guard let emoji else { throw .badRequest("emoji is required for new_emoji_reaction") }
            guard SingleEmoji.isSingleEmoji(emoji) else { throw .badRequest("emoji must be a single emoji") }
        }
        let postID = try fields.string("post_id")
        // Bounds that keep every APNs payload under Apple's 4096 bytes.
        guard eventID.utf8.count <= 128, conversationID.utf8.count <= 128, (emoji?.utf8.count ?? 0) <= 64, (postID?.utf8.count ?? 0) <= 128 else {
            throw .badRequest("event_id, conversation_id and post_id are limited to 128 bytes, emoji to 64")
        }
        return PushRequest(type: type, eventID: eventID, conversationID: conversationID, recipients: recipients,
                           emoji: type == .newEmojiReaction ? emoji : nil, postID: type == .newEmojiReaction ? postID : nil)
    }
}

/// APNs device tokens: hex, even length, 64 to 200 characters; stored lowercase.
public enum DeviceToken {
    public static func validate(_ token: String) throws(APIError) -> String {
        let lowered = token.lowercased()
        guard (64...200).contains(lowered.utf8.count), lowered.utf8.count % 2 == 0, Hex.decode(lowered) != nil else {
            throw .badRequest("device_token must be hex with an even length of 64 to 200 characters")
        }
        return lowered
    }

    /// A token shortened for logs: never the whole token.
    public static func redacted(_ token: String) -> String { "…" + token.suffix(6) }
}

/// `POST /v1/suppressions`: `{"event_ids": [wrap ids]}`, the caller's own self-copies, which the
/// relay watcher must not push to the caller's devices.
public struct SuppressionRequest: Sendable, Equatable {
    public var eventIDs: [String]

    public static let maxEventIDs = 500

    public static func parse(_ body: [UInt8]) throws(APIError) -> SuppressionRequest {
        let fields = RequestFields(object: try JSONBody.parseObject(body))
        let ids = (try fields.stringList("event_ids") ?? []).map { $0.lowercased() }.cleanedIDs()
        guard !ids.isEmpty else { throw .badRequest("event_ids is required") }
        guard ids.count <= maxEventIDs else { throw .badRequest("event_ids has \(ids.count) entries; at most \(maxEventIDs) are accepted") }
        guard ids.allSatisfy({ Hex.decode($0, count: 32) != nil }) else { throw .badRequest("event_ids must be 64-character hex event ids") }
        return SuppressionRequest(eventIDs: ids)
    }
}
