/// Which push service a registered device is reached through.
public enum PushPlatform: String, Sendable, Hashable, CaseIterable {
    /// Apple Push Notification service: iOS and macOS apps.
    case apns
    /// Firebase Cloud Messaging HTTP v1: Android apps.
    case fcm
    /// A browser's push service (RFC 8030), messages encrypted to the subscription (RFC 8291).
    case webpush
    /// A UnifiedPush distributor's endpoint: open Android; encrypted when the registration gave keys.
    case unifiedpush
}

/// What kind of APNs token a device registered: an app's alert token, or a PushKit VoIP token
/// (pushed on the `<bundle id>.voip` topic, for incoming calls).
public enum APNsTokenKind: String, Sendable, Hashable, CaseIterable {
    case alert
    case voip
}
