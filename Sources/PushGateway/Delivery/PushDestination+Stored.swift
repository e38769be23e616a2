import GatewayWire
import WebPush

extension PushDestination {
    /// A device's destination from its `devices` columns, as registration stored it. Nil for a
    /// row that does not describe one (a platform or token kind this build does not know, keys
    /// that no longer parse): such a device's jobs are skipped and left to expire, since failing
    /// the claim would stop every job behind it.
    package init?(
        storedPlatform platform: String, address: String, environment: String?, pushType: String, p256dh: String?, authSecret: String?
    ) {
        var keys: WebPushSubscriptionKeys?
        if let p256dh, let authSecret {
            guard let parsed = try? WebPushSubscriptionKeys(p256dh: p256dh, auth: authSecret) else { return nil }
            keys = parsed
        }
        switch PushPlatform(rawValue: platform) {
        case .apns:
            guard let environment = environment.flatMap(APNsEnvironment.init(rawValue:)), let kind = APNsTokenKind(rawValue: pushType)
            else { return nil }
            self = .apns(token: address, environment: environment, kind: kind)
        case .fcm:
            self = .fcm(token: address)
        case .webpush:
            guard let endpoint = try? PushEndpoint(address), let keys else { return nil }
            self = .webPush(endpoint: endpoint, keys: keys)
        case .unifiedpush:
            guard let endpoint = try? PushEndpoint(address) else { return nil }
            self = .unifiedPush(endpoint: endpoint, keys: keys)
        case nil:
            return nil
        }
    }
}
