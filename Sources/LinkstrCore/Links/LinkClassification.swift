import Foundation

/// A post's URL classified: provider, canonical URL (mobile hosts folded into the desktop site),
/// playback mode, and the embed URL where one can be built without the network.
public struct LinkClassification: Sendable, Equatable {
    public var provider: LinkProvider
    public var canonicalURL: String
    public var playback: PlaybackMode
    /// The web player's URL; nil for the link fallback, for Twitter/X (the widget factory takes
    /// `tweetID`) and for Rumble (its iframe URL comes from oEmbed, `oEmbedURL`).
    public var embedURL: String?
    public var tweetID: String?
    public var oEmbedURL: String?

    /// Classifies `input` (normalised first); nil when it is not a web URL.
    public static func classify(_ input: String) -> LinkClassification? {
        guard let link = ParsedLink(input) else { return nil }
        let recognised: LinkClassification?
        switch link.host {
        case "tiktok.com", "m.tiktok.com": recognised = tiktokVideo(link)
        case "vm.tiktok.com", "vt.tiktok.com": recognised = tiktokShortLink(link)
        case "instagram.com", "m.instagram.com": recognised = instagram(link)
        case "facebook.com", "m.facebook.com", "mobile.facebook.com", "web.facebook.com", "fb.watch": recognised = facebook(link)
        case "twitter.com", "x.com", "mobile.twitter.com", "mobile.x.com": recognised = twitter(link)
        case "youtube.com", "m.youtube.com", "music.youtube.com", "youtu.be": recognised = youtube(link)
        case "rumble.com", "m.rumble.com": recognised = rumble(link)
        default: recognised = nil
        }
        return recognised ?? LinkClassification(provider: .generic, canonicalURL: link.normalized, playback: .link)
    }

    init(
        provider: LinkProvider, canonicalURL: String, playback: PlaybackMode, embedURL: String? = nil, tweetID: String? = nil,
        oEmbedURL: String? = nil
    ) {
        self.provider = provider
        self.canonicalURL = canonicalURL
        self.playback = playback
        self.embedURL = embedURL
        self.tweetID = tweetID
        self.oEmbedURL = oEmbedURL
    }
}

// Each provider's rules; nil when the URL is not one of its videos or posts (a plain link then).
extension LinkClassification {
    /// A normalised URL taken apart: host without `www.`, path segments.
    private struct ParsedLink {
        let normalized: String
        let components: URLComponents
        let host: String
        let segments: [String]

        init?(_ input: String) {
            guard let normalized = LinkURL.normalize(input), let components = URLComponents(string: normalized),
                let rawHost = components.host
            else {
                return nil
            }
            self.normalized = normalized
            self.components = components
            host = rawHost.hasPrefix("www.") ? String(rawHost.dropFirst(4)) : rawHost
            segments = components.path.split(separator: "/").map(String.init)
        }

        /// The URL over https on `newHost`, with `path` if given, `query` as the whole query, no fragment.
        func canonical(host newHost: String, path: String? = nil, query: [URLQueryItem]? = nil) -> String {
            var components = components
            components.scheme = "https"
            components.host = newHost
            if let path { components.path = path }
            components.queryItems = query
            components.fragment = nil
            return components.string ?? normalized
        }
    }

    /// /@user/video/<id>
    private static func tiktokVideo(_ link: ParsedLink) -> LinkClassification? {
        let segments = link.segments
        guard segments.count >= 3, segments[0].hasPrefix("@"), segments[1] == "video", let id = segments.last, id.allSatisfy(\.isNumber)
        else {
            return nil
        }
        return LinkClassification(
            provider: .tiktok, canonicalURL: link.canonical(host: "www.tiktok.com", path: "/\(segments[0])/video/\(id)"),
            playback: .extractionPreferred, embedURL: "https://www.tiktok.com/@_/video/\(id)")
    }

    /// Short links resolve to a video on the provider's side; extraction follows them.
    private static func tiktokShortLink(_ link: ParsedLink) -> LinkClassification? {
        guard link.segments.count == 1 else { return nil }
        return LinkClassification(
            provider: .tiktok, canonicalURL: link.canonical(host: link.host, query: nil), playback: .extractionPreferred)
    }

    private static func instagram(_ link: ParsedLink) -> LinkClassification? {
        let segments = link.segments
        guard segments.count >= 2 else { return nil }
        let code = segments[1]
        switch segments[0] {
        case "reel", "reels":
            return LinkClassification(
                provider: .instagramReel, canonicalURL: link.canonical(host: "www.instagram.com", path: "/reel/\(code)/"),
                playback: .extractionPreferred, embedURL: "https://www.instagram.com/reel/\(code)/")
        case "p", "tv":
            return LinkClassification(
                provider: .instagramPost, canonicalURL: link.canonical(host: "www.instagram.com", path: "/\(segments[0])/\(code)/"),
                playback: .embedOnly, embedURL: "https://www.instagram.com/p/\(code)/")
        default:
            return nil
        }
    }

    private static func facebook(_ link: ParsedLink) -> LinkClassification? {
        let segments = link.segments
        let canonicalHost = link.host == "fb.watch" ? "fb.watch" : "www.facebook.com"
        let isReel = segments.first == "reel" && segments.count >= 2
        let isVideo = segments.contains("videos") || segments.first == "watch" || link.host == "fb.watch"
        guard isReel || isVideo else { return nil }
        let keep = segments.first == "watch" ? link.components.queryItems?.filter { $0.name == "v" } : nil
        let url = link.canonical(host: canonicalHost, query: keep)
        let embed =
            "https://www.facebook.com/plugins/video.php?href=" + (url.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? url)
        return LinkClassification(
            provider: isReel ? .facebookReel : .facebookVideo, canonicalURL: url,
            playback: isReel ? .extractionPreferred : .embedOnly, embedURL: embed)
    }

    /// /<user>/status/<id>
    private static func twitter(_ link: ParsedLink) -> LinkClassification? {
        let segments = link.segments
        guard segments.count >= 3, segments[1] == "status", segments[2].allSatisfy(\.isNumber) else { return nil }
        return LinkClassification(
            provider: .twitter, canonicalURL: link.canonical(host: "x.com", path: "/\(segments[0])/status/\(segments[2])"),
            playback: .resolvedAtRuntime, tweetID: segments[2])
    }

    private static func youtube(_ link: ParsedLink) -> LinkClassification? {
        let segments = link.segments
        var id: String?
        if link.host == "youtu.be" {
            id = segments.first
        } else if segments.first == "watch" {
            id = link.components.queryItems?.first { $0.name == "v" }?.value
        } else if let first = segments.first, ["shorts", "embed", "live", "v"].contains(first), segments.count >= 2 {
            id = segments[1]
        }
        guard let id, !id.isEmpty, id.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else { return nil }
        return LinkClassification(
            provider: .youtube,
            canonicalURL: link.canonical(host: "www.youtube.com", path: "/watch", query: [URLQueryItem(name: "v", value: id)]),
            playback: .embedOnly, embedURL: "https://www.youtube.com/embed/\(id)")
    }

    /// Videos are /<id>-<title>.html; the iframe URL comes from oEmbed.
    private static func rumble(_ link: ParsedLink) -> LinkClassification? {
        guard link.segments.count == 1, link.segments[0].hasSuffix(".html") else { return nil }
        let url = link.canonical(host: "rumble.com", query: nil)
        return LinkClassification(
            provider: .rumble, canonicalURL: url, playback: .embedOnly,
            oEmbedURL: "https://rumble.com/api/Media/oembed.json?url="
                + (url.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? url))
    }
}
