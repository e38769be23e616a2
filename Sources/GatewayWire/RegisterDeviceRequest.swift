/// `POST /v1/devices/register`: a device token, its APNs environment, the app's topic, and
/// whether the relay watcher should push gift wraps to it.
public struct RegisterDeviceRequest: Sendable, Equatable {
    public var deviceToken: String
    public var environment: APNsEnvironment
    public var topic: String?
    public var relayWatch: Bool

    public init(deviceToken: String, environment: APNsEnvironment, topic: String? = nil, relayWatch: Bool = false) {
        self.deviceToken = deviceToken
        self.environment = environment
        self.topic = topic
        self.relayWatch = relayWatch
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
            topic: try fields.string("topic"), relayWatch: try fields.bool("relay_watch") ?? false)
    }
}
