public import GatewayWire
import NostrProtocol

/// The APNs request for one queued job, exactly as the linkstr app expects it
/// (docs/linkstr-wire.md §4).
public struct APNsNotification: Sendable, Equatable {
    public var type: NotificationType
    public var eventID: String
    public var conversationID: String
    public var emoji: String?
    public var postID: String?
    /// Relay-watch alerts: where the wrap was seen, how many wraps the push stands for, and
    /// whose devices it goes to (the collapse id).
    public var relay: String?
    public var count: Int
    public var recipient: String?
    /// A background refresh: no alert, `content-available`, priority 5.
    public var background: Bool
    /// The app's own wording for this type (`AlertTextCatalog`), in place of the generic one.
    public var alertText: AlertText?

    public static let maxPayloadBytes = 4096
    public static let maxCollapseIDBytes = 64

    public init(
        type: NotificationType, eventID: String, conversationID: String, emoji: String? = nil, postID: String? = nil,
        relay: String? = nil, count: Int = 1, recipient: String? = nil, background: Bool = false
    ) {
        self.type = type
        self.eventID = eventID
        self.conversationID = conversationID
        self.emoji = emoji
        self.postID = postID
        self.relay = relay
        self.count = count
        self.recipient = recipient
        self.background = background
    }

    /// The relay watcher's generic alert for `wrapID` to `recipient`'s devices.
    public static func giftWrap(wrapID: String, relay: String, count: Int, recipient: String) -> APNsNotification {
        APNsNotification(type: .giftWrap, eventID: wrapID, conversationID: "", relay: relay, count: count, recipient: recipient)
    }

    public var title: String {
        if let alertText { return alertText.rendered(emoji: emoji).title }
        return switch type {
        case .newPost: "New post in linkstr"
        case .newEmojiReaction: "New reaction \(emoji ?? "") in linkstr"
        case .newMessage: "New message"
        case .mention: "You were mentioned"
        case .incomingCall: "Incoming call"
        case .missedCall: "Missed call"
        case .groupInvite: "New group invite"
        case .giftWrap: "linkstr"
        }
    }

    /// The alert's body: linkstr's own wording for its two types, a generic one for the rest.
    public var body: String {
        if let alertText { return alertText.rendered(emoji: emoji).body }
        return switch type {
        case .newPost, .newEmojiReaction: "Open linkstr to view"
        case .giftWrap: "New activity"
        case .newMessage, .mention, .incomingCall, .missedCall, .groupInvite: "Open the app to view"
        }
    }

    /// `{"aps":{"alert":{"title","body"},"sound","thread-id"},"type","event_id","conversation_id","emoji"?,"post_id"?}`
    public var payload: String {
        if type == .giftWrap { return giftWrapPayload }
        var fields: [String: JSONValue] = [
            // A background push wakes the app without showing anything (Apple: no alert, sound
            // or badge beside content-available).
            "aps": background
                ? ["content-available": 1]
                : .object([
                    "alert": .object(["title": .string(title), "body": .string(body)]),
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

    /// `{"aps":{"alert":{"title":"linkstr","body":"New activity"},"sound","mutable-content":1},
    /// "type":"gift_wrap","wrap_id","relay","count"}`: generic, nothing about the content (the
    /// gateway cannot read it); a notification service extension can fetch and unwrap `wrap_id`.
    /// Written straight out, keys in the sorted order `JSONValue.serialized` uses (a test holds
    /// the two equal): this runs once per relay-watch push, and a dictionary of `JSONValue`s
    /// sorted and serialized was a visible share of the gateway's CPU at 5,000 pushes a second.
    private var giftWrapPayload: String {
        var writer = JSONWriter(reservingCapacity: 256)
        if let alertText {
            let text = alertText.rendered(emoji: nil)
            writer.raw(#"{"aps":{"alert":{"body":"#)
            writer.string(text.body)
            writer.raw(#","title":"#)
            writer.string(text.title)
            writer.raw(#"},"mutable-content":1,"sound":"default"},"count":"#)
        } else {
            writer.raw(#"{"aps":{"alert":{"body":"New activity","title":"linkstr"},"mutable-content":1,"sound":"default"},"count":"#)
        }
        writer.integer(count)
        // A relay URL is at most a few hundred bytes; one that would push the payload past
        // Apple's limit is left out rather than failing the push.
        if let relay, relay.utf8.count <= 1024 {
            writer.raw(#","relay":"#)
            writer.string(relay)
        }
        writer.raw(#","type":"gift_wrap","wrap_id":"#)
        writer.string(eventID)
        writer.byte(UInt8(ascii: "}"))
        return writer.string
    }

    /// `apns-collapse-id` is the event id (the recipient's pubkey for relay-watch alerts, so a
    /// burst shows as one notification), cut to Apple's 64-byte limit on a character boundary.
    public var collapseID: String {
        let source = type == .giftWrap ? (recipient ?? eventID) : eventID
        // The usual case (a 64-character hex id) fits whole: no walk over its characters.
        if source.utf8.count <= Self.maxCollapseIDBytes { return source }
        var result = ""
        for character in source {
            guard result.utf8.count + String(character).utf8.count <= Self.maxCollapseIDBytes else { break }
            result.append(character)
        }
        return result
    }

    /// Headers besides `authorization` and `apns-id`.
    public func headers(topic: String, expiration: Int64) -> [(String, String)] {
        [
            // Apple requires priority 5 for a background push (10 is refused).
            ("apns-topic", topic), ("apns-push-type", background ? "background" : "alert"), ("apns-priority", background ? "5" : "10"),
            ("apns-collapse-id", collapseID), ("apns-expiration", String(expiration)),
        ]
    }

    /// A call to a PushKit token: the app's VoIP topic, at once, and never delivered late (a call
    /// that rang a minute ago is a missed call). No collapse id: every call must ring.
    public func voipHeaders(topic: String, expiration: Int64) -> [(String, String)] {
        [
            ("apns-topic", topic + ".voip"), ("apns-push-type", "voip"), ("apns-priority", "10"),
            ("apns-expiration", String(expiration)),
        ]
    }

    /// How long APNs may hold a VoIP push for an unreachable device.
    public static let voipLifetimeSeconds: Int64 = 30

    /// What PushKit hands the app: the type and ids, no alert (the app reports the call to
    /// CallKit itself). `{"type","event_id","conversation_id"}`.
    public var voipPayload: String {
        JSONValue.object([
            "type": .string(type.rawValue), "event_id": .string(eventID), "conversation_id": .string(conversationID),
        ]).serialized
    }
}
