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
        guard let normalized = LinkURL.normalize(input), var components = URLComponents(string: normalized), let rawHost = components.host else {
            return nil
        }
        let host = rawHost.hasPrefix("www.") ? String(rawHost.dropFirst(4)) : rawHost
        let segments = components.path.split(separator: "/").map(String.init)
        func generic() -> LinkClassification {
            LinkClassification(provider: .generic, canonicalURL: normalized, playback: .link)
        }
        func canonical(host newHost: String, path: String? = nil, query: [URLQueryItem]? = nil) -> String {
            components.scheme = "https"
            components.host = newHost
            if let path { components.path = path }
            components.queryItems = query
            components.fragment = nil
            return components.string ?? normalized
        }

        switch host {
        case "tiktok.com", "m.tiktok.com":
            // /@user/video/<id>
            guard segments.count >= 3, segments[0].hasPrefix("@"), segments[1] == "video", let id = segments.last, id.allSatisfy(\.isNumber) else {
                return generic()
            }
            return LinkClassification(
                provider: .tiktok, canonicalURL: canonical(host: "www.tiktok.com", path: "/\(segments[0])/video/\(id)"),
                playback: .extractionPreferred, embedURL: "https://www.tiktok.com/@_/video/\(id)")
        case "vm.tiktok.com", "vt.tiktok.com":
            // Short links resolve to a video on the provider's side; extraction follows them.
            guard segments.count == 1 else { return generic() }
            return LinkClassification(provider: .tiktok, canonicalURL: canonical(host: host, query: nil), playback: .extractionPreferred)
        case "instagram.com", "m.instagram.com":
            guard segments.count >= 2 else { return generic() }
            let code = segments[1]
            switch segments[0] {
            case "reel", "reels":
                return LinkClassification(
                    provider: .instagramReel, canonicalURL: canonical(host: "www.instagram.com", path: "/reel/\(code)/"),
                    playback: .extractionPreferred, embedURL: "https://www.instagram.com/reel/\(code)/")
            case "p", "tv":
                return LinkClassification(
                    provider: .instagramPost, canonicalURL: canonical(host: "www.instagram.com", path: "/\(segments[0])/\(code)/"),
                    playback: .embedOnly, embedURL: "https://www.instagram.com/p/\(code)/")
            default:
                return generic()
            }
        case "facebook.com", "m.facebook.com", "mobile.facebook.com", "web.facebook.com", "fb.watch":
            let canonicalHost = host == "fb.watch" ? "fb.watch" : "www.facebook.com"
            let isReel = segments.first == "reel" && segments.count >= 2
            let isVideo = segments.contains("videos") || segments.first == "watch" || host == "fb.watch"
            guard isReel || isVideo else { return generic() }
            let keep = segments.first == "watch" ? components.queryItems?.filter { $0.name == "v" } : nil
            let url = canonical(host: canonicalHost, query: keep)
            let embed = "https://www.facebook.com/plugins/video.php?href=" + (url.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? url)
            return LinkClassification(
                provider: isReel ? .facebookReel : .facebookVideo, canonicalURL: url,
                playback: isReel ? .extractionPreferred : .embedOnly, embedURL: embed)
        case "twitter.com", "x.com", "mobile.twitter.com", "mobile.x.com":
            // /<user>/status/<id>
            guard segments.count >= 3, segments[1] == "status", segments[2].allSatisfy(\.isNumber) else { return generic() }
            return LinkClassification(
                provider: .twitter, canonicalURL: canonical(host: "x.com", path: "/\(segments[0])/status/\(segments[2])"),
                playback: .resolvedAtRuntime, tweetID: segments[2])
        case "youtube.com", "m.youtube.com", "music.youtube.com", "youtu.be":
            var id: String?
            if host == "youtu.be" {
                id = segments.first
            } else if segments.first == "watch" {
                id = components.queryItems?.first { $0.name == "v" }?.value
            } else if let first = segments.first, ["shorts", "embed", "live", "v"].contains(first), segments.count >= 2 {
                id = segments[1]
            }
            guard let id, !id.isEmpty, id.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else { return generic() }
            return LinkClassification(
                provider: .youtube, canonicalURL: canonical(host: "www.youtube.com", path: "/watch", query: [URLQueryItem(name: "v", value: id)]),
                playback: .embedOnly, embedURL: "https://www.youtube.com/embed/\(id)")
        case "rumble.com", "m.rumble.com":
            // Videos are /<id>-<title>.html; the iframe URL comes from oEmbed.
            guard segments.count == 1, segments[0].hasSuffix(".html") else { return generic() }
            let url = canonical(host: "rumble.com", query: nil)
            return LinkClassification(
                provider: .rumble, canonicalURL: url, playback: .embedOnly,
                oEmbedURL: "https://rumble.com/api/Media/oembed.json?url=" + (url.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? url))
        default:
            return generic()
        }
    }

    init(provider: LinkProvider, canonicalURL: String, playback: PlaybackMode, embedURL: String? = nil, tweetID: String? = nil,
         oEmbedURL: String? = nil) {
        self.provider = provider
        self.canonicalURL = canonicalURL
        self.playback = playback
        self.embedURL = embedURL
        self.tweetID = tweetID
        self.oEmbedURL = oEmbedURL
    }
}
