import Foundation

/// A relay in the user's list: its URL and whether it is used.
public struct RelayEntry: Sendable, Equatable, Codable {
    public var url: String
    public var enabled: Bool

    public init(url: String, enabled: Bool = true) {
        self.url = url
        self.enabled = enabled
    }

    /// Relays used when the list is empty (boot) or reset.
    public static let defaults = ["wss://relay.damus.io", "wss://nos.lol", "wss://relay.primal.net"]

    /// `ws://` or `wss://` with a host; trimmed, scheme and host lowercased, trailing slash
    /// dropped. Nil for anything else.
    public static func normalize(_ input: String) -> String? {
        let trimmed = input.trimmingCharacters(in: .whitespacesAndNewlines)
        guard var components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased(),
            scheme == "ws" || scheme == "wss",
            let host = components.host, !host.isEmpty, !trimmed.contains(where: \.isWhitespace)
        else { return nil }
        components.scheme = scheme
        components.host = host.lowercased()
        if components.path == "/" { components.path = "" }
        return components.string
    }
}
