public import NostrProtocol
import WebPush

/// `POST /v1/devices/register`: where the device's pushes go (`platform` and what it needs), the
/// app's topic, whether the relay watcher should push gift wraps to it, and the user's inbox
/// relays for when the user publishes no NIP-17 relay list.
///
/// | `platform` | fields |
/// |---|---|
/// | `apns` (the default) | `device_token` (hex), `apns_environment`, optional `push_type`: `alert` or `voip` |
/// | `fcm` | `device_token`: an FCM registration token |
/// | `webpush` | `subscription`: `PushSubscription.toJSON()`, its `endpoint` and `keys` |
/// | `unifiedpush` | `endpoint`, optional `keys` (`p256dh`, `auth`) |
public struct RegisterDeviceRequest: Sendable, Equatable {
    /// Relays a registration may name.
    public static let maxRelays = 10

    public var destination: PushDestination
    public var topic: String?
    public var relayWatch: Bool
    /// Normalised, without duplicates, in the order given; empty when the field is absent.
    public var relays: [RelayURL]

    public init(destination: PushDestination, topic: String? = nil, relayWatch: Bool = false, relays: [RelayURL] = []) {
        self.destination = destination
        self.topic = topic
        self.relayWatch = relayWatch
        self.relays = relays
    }

    /// An APNs alert token's registration.
    public init(
        deviceToken: String, environment: APNsEnvironment, topic: String? = nil, relayWatch: Bool = false, relays: [RelayURL] = []
    ) {
        self.init(
            destination: .apns(token: deviceToken, environment: environment, kind: .alert), topic: topic, relayWatch: relayWatch,
            relays: relays)
    }

    /// The device's identity: its token, or its endpoint.
    public var deviceToken: String { destination.address }

    public static func parse(_ body: [UInt8]) throws(RequestBodyError) -> RegisterDeviceRequest {
        let fields = try RequestFields(parsing: body)
        return RegisterDeviceRequest(
            destination: try destination(fields), topic: try fields.string("topic"), relayWatch: try fields.bool("relay_watch") ?? false,
            relays: try relays(fields))
    }

    private static func destination(_ fields: RequestFields) throws(RequestBodyError) -> PushDestination {
        let platformText = try fields.string("platform")?.lowercased() ?? PushPlatform.apns.rawValue
        guard let platform = PushPlatform(rawValue: platformText) else {
            throw RequestBodyError("platform must be one of \(PushPlatform.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        switch platform {
        case .apns:
            let token = try fields.string("device_token")
            let environmentText = try fields.string("apns_environment")
            guard let token, let environmentText else { throw RequestBodyError("device_token and apns_environment are required") }
            guard let environment = APNsEnvironment(rawValue: environmentText.lowercased()) else {
                throw RequestBodyError("apns_environment must be sandbox or production")
            }
            let kindText = try fields.string("push_type")?.lowercased() ?? APNsTokenKind.alert.rawValue
            guard let kind = APNsTokenKind(rawValue: kindText) else { throw RequestBodyError("push_type must be alert or voip") }
            return .apns(token: try DeviceToken.validate(token), environment: environment, kind: kind)
        case .fcm:
            guard let token = try fields.string("device_token") else { throw RequestBodyError("device_token is required for fcm") }
            return .fcm(token: try DeviceToken.validateFCM(token))
        case .webpush:
            guard let subscription = try fields.object("subscription") else {
                throw RequestBodyError("subscription is required for webpush: the browser's PushSubscription.toJSON()")
            }
            guard let endpointText = try subscription.string("endpoint") else {
                throw RequestBodyError("subscription.endpoint is required")
            }
            guard let keys = try subscription.object("keys") else { throw RequestBodyError("subscription.keys is required") }
            return .webPush(endpoint: try PushEndpoint(endpointText), keys: try subscriptionKeys(keys, prefix: "subscription."))
        case .unifiedpush:
            guard let endpointText = try fields.string("endpoint") else { throw RequestBodyError("endpoint is required for unifiedpush") }
            let keys = try fields.object("keys")
            return .unifiedPush(
                endpoint: try PushEndpoint(endpointText),
                keys: try keys.map { fields throws(RequestBodyError) in try subscriptionKeys(fields, prefix: "") })
        }
    }

    /// `keys`: both `p256dh` and `auth`, each checked (`WebPushSubscriptionKeys`).
    private static func subscriptionKeys(_ keys: RequestFields, prefix: String) throws(RequestBodyError) -> WebPushSubscriptionKeys {
        guard let p256dh = try keys.string("p256dh"), let auth = try keys.string("auth") else {
            throw RequestBodyError("\(prefix)keys must hold p256dh and auth")
        }
        do {
            return try WebPushSubscriptionKeys(p256dh: p256dh, auth: auth)
        } catch {
            throw RequestBodyError(prefix + error.description)
        }
    }

    /// `relays`: at most `maxRelays` ws:// or wss:// URLs; an error names the first bad one by
    /// its position.
    private static func relays(_ fields: RequestFields) throws(RequestBodyError) -> [RelayURL] {
        guard let texts = try fields.stringList("relays") else { return [] }
        guard texts.count <= maxRelays else { throw RequestBodyError("relays must hold at most \(maxRelays) URLs") }
        var relays: [RelayURL] = []
        for (index, text) in texts.enumerated() {
            do {
                let url = try RelayURL(text)
                if !relays.contains(url) { relays.append(url) }
            } catch {
                throw RequestBodyError("relays[\(index)] \(error)")
            }
        }
        return relays
    }
}
