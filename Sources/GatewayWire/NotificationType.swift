/// What a push announces; the raw values are the contract's `notification_type`. linkstr sends
/// `new_post` and `new_emoji_reaction`; the others serve other private Nostr apps (chats, calls,
/// groups). Every push carries ids only: the app fetches and decrypts the details itself.
public enum NotificationType: String, Sendable, Hashable, CaseIterable {
    case newPost = "new_post"
    case newEmojiReaction = "new_emoji_reaction"
    case newMessage = "new_message"
    case mention
    /// A call is ringing: a VoIP push to an iPhone's PushKit token (an alert when the user has
    /// none), a high-priority message everywhere else.
    case incomingCall = "incoming_call"
    case missedCall = "missed_call"
    case groupInvite = "group_invite"
    /// The relay watcher's generic alert; never accepted from `POST /v1/push`.
    case giftWrap = "gift_wrap"

    /// Urgent enough to wake a device at once wherever the platform lets the sender say so.
    public var isCall: Bool { self == .incomingCall }
}
