/// `POST /v1/devices/unregister`: the device to remove from the caller's devices, by its token
/// (`device_token`: APNs or FCM) or its endpoint (`endpoint`: Web Push or UnifiedPush).
public struct UnregisterDeviceRequest: Sendable, Equatable {
    /// What the device is stored under (`PushDestination.address`).
    public var deviceToken: String

    public init(deviceToken: String) { self.deviceToken = deviceToken }

    public static func parse(_ body: [UInt8]) throws(RequestBodyError) -> UnregisterDeviceRequest {
        let fields = try RequestFields(parsing: body)
        let token = try fields.string("device_token"), endpoint = try fields.string("endpoint")
        switch (token, endpoint) {
        case (let token?, nil):
            // An APNs token is stored lowercase; anything else that is no hex is an FCM token.
            if let apns = try? DeviceToken.validate(token) { return UnregisterDeviceRequest(deviceToken: apns) }
            return UnregisterDeviceRequest(deviceToken: try DeviceToken.validateFCM(token))
        case (nil, let endpoint?):
            return UnregisterDeviceRequest(deviceToken: try PushEndpoint(endpoint).description)
        case (nil, nil): throw RequestBodyError("device_token or endpoint is required")
        case (.some, .some): throw RequestBodyError("give device_token or endpoint, not both")
        }
    }
}
