/// What a push announces; the raw values are the contract's `notification_type`.
public enum NotificationType: String, Sendable, Hashable {
    case newPost = "new_post"
    case newEmojiReaction = "new_emoji_reaction"
    /// The relay watcher's generic alert; never accepted from `POST /v1/push`.
    case giftWrap = "gift_wrap"
}
