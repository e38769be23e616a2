/// `POST /v1/devices/unregister`: the token to remove from the caller's devices.
public struct UnregisterDeviceRequest: Sendable, Equatable {
    public var deviceToken: String

    public init(deviceToken: String) { self.deviceToken = deviceToken }

    public static func parse(_ body: [UInt8]) throws(RequestBodyError) -> UnregisterDeviceRequest {
        let fields = try RequestFields(parsing: body)
        guard let token = try fields.string("device_token") else { throw RequestBodyError("device_token is required") }
        return UnregisterDeviceRequest(deviceToken: try DeviceToken.validate(token))
    }
}
