import LinkstrCore
import Testing

/// Links: normalisation, provider classification with canonical mobile hosts, embed URLs and
/// playback modes, and `linkstr://open?url=` deep links, as the linkstr app has them.
@Suite struct LinkTests {
    @Test(arguments: [
        ("example.com/a", "https://example.com/a"),
        ("  HTTPS://Example.COM/Path?q=1  ", "https://example.com/Path?q=1"),
        ("http://example.com", "http://example.com"),
        ("example.com:8080/x", "https://example.com:8080/x"),
    ])
    func normalisationAddsHTTPSAndKeepsOnlyWebURLs(input: String, expected: String) {
        #expect(LinkURL.normalize(input) == expected)
    }

    @Test(arguments: [
        "", "   ", "ftp://example.com/file", "mailto:someone@example.com", "https://", "javascript://alert(1)", "two words.com",
    ])
    func anythingElseIsRefused(input: String) {
        #expect(LinkURL.normalize(input) == nil)
    }

    @Test(arguments: [
        (
            "https://www.tiktok.com/@someone/video/7234567890123456789?is_from_webapp=1", LinkProvider.tiktok,
            PlaybackMode.extractionPreferred,
            "https://www.tiktok.com/@someone/video/7234567890123456789", "https://www.tiktok.com/@_/video/7234567890123456789"
        ),
        (
            "https://m.tiktok.com/@someone/video/42", .tiktok, .extractionPreferred,
            "https://www.tiktok.com/@someone/video/42", "https://www.tiktok.com/@_/video/42"
        ),
        (
            "https://www.instagram.com/reels/CxYz123/?igsh=abc", .instagramReel, .extractionPreferred,
            "https://www.instagram.com/reel/CxYz123/", "https://www.instagram.com/reel/CxYz123/"
        ),
        (
            "instagram.com/p/Post42", .instagramPost, .embedOnly, "https://www.instagram.com/p/Post42/",
            "https://www.instagram.com/p/Post42/"
        ),
        (
            "https://m.facebook.com/reel/123456", .facebookReel, .extractionPreferred, "https://www.facebook.com/reel/123456",
            "https://www.facebook.com/plugins/video.php?href=https%3A%2F%2Fwww%2Efacebook%2Ecom%2Freel%2F123456"
        ),
        (
            "https://www.facebook.com/somepage/videos/987654/", .facebookVideo, .embedOnly,
            "https://www.facebook.com/somepage/videos/987654/",
            "https://www.facebook.com/plugins/video.php?href=https%3A%2F%2Fwww%2Efacebook%2Ecom%2Fsomepage%2Fvideos%2F987654%2F"
        ),
        (
            "https://youtu.be/dQw4w9WgXcQ?t=10", .youtube, .embedOnly, "https://www.youtube.com/watch?v=dQw4w9WgXcQ",
            "https://www.youtube.com/embed/dQw4w9WgXcQ"
        ),
        (
            "https://m.youtube.com/watch?v=dQw4w9WgXcQ&feature=share", .youtube, .embedOnly, "https://www.youtube.com/watch?v=dQw4w9WgXcQ",
            "https://www.youtube.com/embed/dQw4w9WgXcQ"
        ),
        (
            "https://www.youtube.com/shorts/abc_DEF-123", .youtube, .embedOnly, "https://www.youtube.com/watch?v=abc_DEF-123",
            "https://www.youtube.com/embed/abc_DEF-123"
        ),
    ])
    func videoProvidersAreRecognisedWithTheirEmbed(
        input: String, provider: LinkProvider, playback: PlaybackMode, canonical: String, embed: String
    ) throws {
        let link = try #require(LinkClassification.classify(input))
        #expect(link.provider == provider)
        #expect(link.playback == playback)
        #expect(link.canonicalURL == canonical)
        #expect(link.embedURL == embed)
    }

    @Test func twitterStatusesAreResolvedAtRuntimeAndRumbleGoesThroughOEmbed() throws {
        let tweet = try #require(LinkClassification.classify("https://mobile.twitter.com/someone/status/1790000000000000000?s=20"))
        #expect(tweet.provider == .twitter && tweet.playback == .resolvedAtRuntime)
        #expect(tweet.canonicalURL == "https://x.com/someone/status/1790000000000000000")
        #expect(tweet.tweetID == "1790000000000000000" && tweet.embedURL == nil)

        let rumble = try #require(LinkClassification.classify("https://rumble.com/v4abc12-a-title.html?mref=x"))
        #expect(rumble.provider == .rumble && rumble.playback == .embedOnly)
        #expect(rumble.canonicalURL == "https://rumble.com/v4abc12-a-title.html")
        #expect(rumble.oEmbedURL == "https://rumble.com/api/Media/oembed.json?url=https%3A%2F%2Frumble%2Ecom%2Fv4abc12%2Da%2Dtitle%2Ehtml")
    }

    @Test(arguments: [
        "https://www.tiktok.com/@someone", "https://www.instagram.com/someone/", "https://www.facebook.com/somepage",
        "https://x.com/someone", "https://www.youtube.com/@channel", "https://rumble.com/c/channel", "https://example.com/video.mp4",
    ])
    func providerPagesThatAreNotVideosFallBackToTheBrowser(input: String) throws {
        let link = try #require(LinkClassification.classify(input))
        #expect(link.provider == .generic && link.playback == .link && link.embedURL == nil)
    }

    @Test func deepLinksCarryTheNormalisedURLAndSurviveQuerySyntax() throws {
        let url = "https://example.com/a b?x=1&y=2+3#frag"
        #expect(DeepLink.make(for: url) == nil, "not a URL (a space in the path)")
        let tricky = "example.com/watch?x=1&y=2+3"
        let link = try #require(DeepLink.make(for: tricky))
        #expect(link == "linkstr://open?url=https%3A%2F%2Fexample.com%2Fwatch%3Fx%3D1%26y%3D2%2B3")
        #expect(DeepLink.url(from: link) == "https://example.com/watch?x=1&y=2+3")
        #expect(DeepLink.url(from: "linkstr://open?url=https%3A%2F%2Fyoutu.be%2Fabc") == "https://youtu.be/abc")
        for invalid in [
            "linkstr://share?url=https%3A%2F%2Fa.b", "https://open?url=https%3A%2F%2Fa.b", "linkstr://open",
            "linkstr://open?url=ftp%3A%2F%2Fa.b",
        ] {
            #expect(DeepLink.url(from: invalid) == nil, "\(invalid)")
        }
    }
}
