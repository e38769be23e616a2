public import NostrProtocol

/// `POST /v1/devices/register`: a device token, its APNs environment, the app's topic, whether
/// the relay watcher should push gift wraps to it, and the user's inbox relays for when the user
/// publishes no NIP-17 relay list.
public struct RegisterDeviceRequest: Sendable, Equatable {
    /// Relays a registration may name.
    public static let maxRelays = 10

    public var deviceToken: String
    public var environment: APNsEnvironment
    public var topic: String?
    public var relayWatch: Bool
    /// Normalised, without duplicates, in the order given; empty when the field is absent.
    public var relays: [RelayURL]

    public init(
        deviceToken: String, environment: APNsEnvironment, topic: String? = nil, relayWatch: Bool = false, relays: [RelayURL] = []
    ) {
        self.deviceToken = deviceToken
        self.environment = environment
        self.topic = topic
        self.relayWatch = relayWatch
        self.relays = relays
    }

    public static func parse(_ body: [UInt8]) throws(RequestBodyError) -> RegisterDeviceRequest {
        let fields = try RequestFields(parsing: body)
        let token = try fields.string("device_token")
        let environmentText = try fields.string("apns_environment")
        guard let token, let environmentText else { throw RequestBodyError("device_token and apns_environment are required") }
        guard let environment = APNsEnvironment(rawValue: environmentText.lowercased()) else {
            throw RequestBodyError("apns_environment must be sandbox or production")
        }
        return RegisterDeviceRequest(
            deviceToken: try DeviceToken.validate(token), environment: environment,
            topic: try fields.string("topic"), relayWatch: try fields.bool("relay_watch") ?? false, relays: try relays(fields))
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
