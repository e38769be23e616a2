import Foundation

/// An app's own wording for one notification type: the title and body its users see. `{emoji}`
/// in either stands for a reaction's emoji.
public struct AlertText: Sendable, Equatable {
    public var title: String
    public var body: String

    public init(title: String, body: String) {
        self.title = title
        self.body = body
    }

    /// Longest title or body accepted, in UTF-8 bytes: the whole APNs payload is 4 KB, and an
    /// alert is read at a glance.
    public static let maxBytes = 256

    func rendered(emoji: String?) -> (title: String, body: String) {
        guard title.contains("{emoji}") || body.contains("{emoji}") else { return (title, body) }
        let emoji = emoji ?? ""
        return (title.replacingOccurrences(of: "{emoji}", with: emoji), body.replacingOccurrences(of: "{emoji}", with: emoji))
    }
}
