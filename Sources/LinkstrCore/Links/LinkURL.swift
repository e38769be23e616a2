import Foundation

/// URL normalisation for posts and deep links: what a user types becomes a web URL or nothing.
public enum LinkURL {
    /// Trims, adds `https://` when there is no scheme, and accepts only `http`/`https` URLs with
    /// a host; the scheme and host are lowercased. Nil for anything else.
    public static func normalize(_ input: String) -> String? {
        let trimmed = input.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, !trimmed.contains(where: \.isWhitespace) else { return nil }
        let withScheme = hasScheme(trimmed) ? trimmed : "https://" + trimmed
        guard var components = URLComponents(string: withScheme), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else { return nil }
        components.scheme = scheme
        components.host = host.lowercased()
        return components.string
    }

    /// `scheme:` at the start (`https://…`, `mailto:…`, `javascript:…`). A dot before the colon
    /// means a host with a port (`example.com:8080`), which gets `https://`.
    static func hasScheme(_ text: String) -> Bool {
        if text.contains("://") { return true }
        guard let colon = text.firstIndex(of: ":") else { return false }
        let candidate = text[..<colon]
        guard let first = candidate.first, first.isLetter else { return false }
        return candidate.allSatisfy { $0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" }
            && !text[text.index(after: colon)...].allSatisfy(\.isNumber)
    }
}

/// `linkstr://open?url=…`: a shareable link that carries only the normalised web URL.
public enum DeepLink {
    /// The deep link for `url` (normalised first); nil when `url` is not a web URL. Everything but
    /// RFC 3986's unreserved characters is percent-encoded, so `&`, `=` and `+` in the web URL
    /// cannot be mistaken for the deep link's own query syntax.
    public static func make(for url: String) -> String? {
        guard let normalized = LinkURL.normalize(url),
            let encoded = normalized.addingPercentEncoding(withAllowedCharacters: unreserved)
        else { return nil }
        return "linkstr://open?url=" + encoded
    }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// The web URL a deep link opens, or nil when it is not a valid `linkstr://open?url=` link.
    public static func url(from link: String) -> String? {
        guard let components = URLComponents(string: link.trimmingCharacters(in: .whitespacesAndNewlines)),
            components.scheme?.lowercased() == "linkstr", components.host?.lowercased() == "open",
            let value = components.queryItems?.first(where: { $0.name == "url" })?.value
        else { return nil }
        return LinkURL.normalize(value)
    }
}
