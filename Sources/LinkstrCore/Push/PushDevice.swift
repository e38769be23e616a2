import NostrProtocol

/// A device as the push gateway registers it, one case per platform (the gateway's
/// `POST /v1/devices/register`): what the platform's SDK gave the app.
public enum PushDevice: Sendable, Equatable {
    /// An APNs token (hex); `voip` for a PushKit token, which takes calls only.
    case apns(token: String, environment: PushRegistrar.Environment, voip: Bool = false)
    /// An FCM registration token.
    case fcm(token: String)
    /// A browser's `PushSubscription`: its endpoint and keys (base64url), as `toJSON()` gives them.
    case webPush(endpoint: String, p256dh: String, auth: String)
    /// A UnifiedPush distributor's endpoint, with the app's keys when it made some.
    case unifiedPush(endpoint: String, keys: (p256dh: String, auth: String)?)

    public static func == (lhs: PushDevice, rhs: PushDevice) -> Bool {
        switch (lhs, rhs) {
        case (.apns(let a, let b, let c), .apns(let x, let y, let z)): a == x && b == y && c == z
        case (.fcm(let a), .fcm(let x)): a == x
        case (.webPush(let a, let b, let c), .webPush(let x, let y, let z)): a == x && b == y && c == z
        case (.unifiedPush(let a, let b), .unifiedPush(let x, let y)): a == x && b?.p256dh == y?.p256dh && b?.auth == y?.auth
        default: false
        }
    }

    /// The registration body's platform fields.
    var fields: [String: JSONValue] {
        switch self {
        case .apns(let token, let environment, let voip):
            var fields: [String: JSONValue] = ["device_token": .string(token), "apns_environment": .string(environment.rawValue)]
            if voip { fields["push_type"] = "voip" }
            return fields
        case .fcm(let token):
            return ["platform": "fcm", "device_token": .string(token)]
        case .webPush(let endpoint, let p256dh, let auth):
            return [
                "platform": "webpush",
                "subscription": ["endpoint": .string(endpoint), "keys": ["p256dh": .string(p256dh), "auth": .string(auth)]],
            ]
        case .unifiedPush(let endpoint, let keys):
            var fields: [String: JSONValue] = ["platform": "unifiedpush", "endpoint": .string(endpoint)]
            if let keys { fields["keys"] = ["p256dh": .string(keys.p256dh), "auth": .string(keys.auth)] }
            return fields
        }
    }

    /// How unregistering names it: the token, or the endpoint.
    var unregisterFields: [String: JSONValue] {
        switch self {
        case .apns(let token, _, _), .fcm(let token): ["device_token": .string(token)]
        case .webPush(let endpoint, _, _), .unifiedPush(let endpoint, _): ["endpoint": .string(endpoint)]
        }
    }
}
