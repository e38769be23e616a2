import GatewayWire
import NostrProtocol

extension APNsNotification {
    /// What a push carries on every platform but APNs (whose `aps` payload is linkstr's contract):
    /// the type and ids, never content (the gateway has none: a relay-watch wrap is sealed to the
    /// recipient), plus the generic alert text for a service worker or app to show as it is. A
    /// background push is for the app, not the user: no text.
    var portableFields: [String: JSONValue] {
        var fields: [String: JSONValue] = ["type": .string(type.rawValue)]
        if background {
            fields["background"] = true
        } else {
            fields["title"] = .string(title)
        }
        if type == .giftWrap {
            fields["body"] = .string(body)
            fields["wrap_id"] = .string(eventID)
            fields["count"] = .integer(Int64(count))
            if let relay, relay.utf8.count <= 1024 { fields["relay"] = .string(relay) }
        } else {
            if !background { fields["body"] = .string(body) }
            fields["event_id"] = .string(eventID)
            fields["conversation_id"] = .string(conversationID)
            if type == .newEmojiReaction {
                if let emoji { fields["emoji"] = .string(emoji) }
                if let postID { fields["post_id"] = .string(postID) }
            }
        }
        return fields
    }
}
