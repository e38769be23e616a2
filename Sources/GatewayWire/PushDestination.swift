public import WebPush

/// Where a registered device's pushes go, one case per platform with what that platform needs.
public enum PushDestination: Sendable, Equatable {
    case apns(token: String, environment: APNsEnvironment, kind: APNsTokenKind)
    case fcm(token: String)
    /// The browser's `PushSubscription`: every message is encrypted to its keys.
    case webPush(endpoint: PushEndpoint, keys: WebPushSubscriptionKeys)
    /// A distributor's endpoint: encrypted when the app gave keys, a plain POST otherwise.
    case unifiedPush(endpoint: PushEndpoint, keys: WebPushSubscriptionKeys?)

    public var platform: PushPlatform {
        switch self {
        case .apns: .apns
        case .fcm: .fcm
        case .webPush: .webpush
        case .unifiedPush: .unifiedpush
        }
    }

    /// What identifies the device across registrations (the `device_token` it is stored under):
    /// the token, or the endpoint, which a push service issues once per subscription.
    public var address: String {
        switch self {
        case .apns(let token, _, _), .fcm(let token): token
        case .webPush(let endpoint, _): endpoint.description
        case .unifiedPush(let endpoint, _): endpoint.description
        }
    }

    public var endpoint: PushEndpoint? {
        switch self {
        case .webPush(let endpoint, _), .unifiedPush(let endpoint, _): endpoint
        case .apns, .fcm: nil
        }
    }

    public var keys: WebPushSubscriptionKeys? {
        switch self {
        case .webPush(_, let keys): keys
        case .unifiedPush(_, let keys): keys
        case .apns, .fcm: nil
        }
    }
}
