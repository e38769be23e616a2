/// Where a link points, which decides how the linkstr app plays it.
public enum LinkProvider: String, Sendable, Hashable {
    case tiktok
    case instagramReel
    case instagramPost
    case facebookReel
    case facebookVideo
    case twitter
    case youtube
    case rumble
    /// Any other web page, and provider pages that are not a video (profiles, channels).
    case generic
}

/// How a link is shown.
public enum PlaybackMode: String, Sendable, Hashable {
    /// Local playback first (the file is extracted), the provider's embed as fallback.
    case extractionPreferred
    /// The provider's web player only.
    case embedOnly
    /// Decided when the post is opened: extraction when the status has video, else the official
    /// tweet embed, else the browser (Twitter/X statuses).
    case resolvedAtRuntime
    /// Open in the browser.
    case link
}
