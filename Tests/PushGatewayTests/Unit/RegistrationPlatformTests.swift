import Crypto
import GatewayWire
import NostrProtocol
import Testing
import WebPush

/// `POST /v1/devices/register` for every platform, and `unregister` by token or endpoint, as
/// values: what each accepts, its normal form, and each refusal's message.
@Suite struct RegistrationPlatformTests {
    static let apnsToken = String(repeating: "ab", count: 32)
    static let fcmToken = "cZ1q2-Xy_3:APA91bH" + String(repeating: "k9", count: 60)
    static let receiver = P256.KeyAgreement.PrivateKey()
    static let p256dh = Base64URL.encode(receiver.publicKey.x963Representation)
    static let auth = Base64URL.encode([UInt8](repeating: 7, count: 16))
    static let endpoint = "https://Push.Example:443/wpush/v2/gAAAAABk-abc_123?x=1"

    static func parse(_ json: String) throws(RequestBodyError) -> RegisterDeviceRequest {
        try RegisterDeviceRequest.parse(Array(json.utf8))
    }

    static func refusal(_ json: String) -> String? {
        do {
            _ = try parse(json)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func apnsIsTheDefaultAndTakesAVoIPToken() throws {
        let plain = try Self.parse(#"{"device_token":"\#(Self.apnsToken.uppercased())","apns_environment":"sandbox"}"#)
        #expect(plain.destination == .apns(token: Self.apnsToken, environment: .sandbox, kind: .alert))
        let voip = try Self.parse(
            #"{"platform":"APNS","device_token":"\#(Self.apnsToken)","apns_environment":"production","push_type":"VoIP"}"#)
        #expect(voip.destination == .apns(token: Self.apnsToken, environment: .production, kind: .voip))
        #expect(voip.destination.platform == .apns)
        #expect(voip.deviceToken == Self.apnsToken)
    }

    @Test func fcmTakesARegistrationTokenAsGiven() throws {
        let request = try Self.parse(#"{"platform":"fcm","device_token":"\#(Self.fcmToken)","relay_watch":true}"#)
        #expect(request.destination == .fcm(token: Self.fcmToken))
        #expect(request.relayWatch)
    }

    @Test func webPushTakesTheBrowsersSubscriptionAsIs() throws {
        // PushSubscription.toJSON() as a browser gives it, expirationTime included.
        let json = #"""
            {"platform":"webpush","subscription":{"endpoint":"\#(Self.endpoint)","expirationTime":null,
             "keys":{"p256dh":"\#(Self.p256dh)","auth":"\#(Self.auth)"}}}
            """#
        let request = try Self.parse(json)
        let keys = try WebPushSubscriptionKeys(p256dh: Self.p256dh, auth: Self.auth)
        let endpoint = try PushEndpoint(Self.endpoint)
        #expect(request.destination == .webPush(endpoint: endpoint, keys: keys))
        // Scheme, host and default port normalised; the path and query kept byte for byte.
        #expect(request.deviceToken == "https://push.example/wpush/v2/gAAAAABk-abc_123?x=1")
        #expect(endpoint.origin == "https://push.example")
        #expect(try PushEndpoint("https://push.example:8443").description == "https://push.example:8443/")
        // Well-formed escapes, either case, are kept as written.
        #expect(try PushEndpoint("https://push.example/a%2Fb?t=%3d%3D").description == "https://push.example/a%2Fb?t=%3d%3D")
    }

    @Test func unifiedPushTakesAnEndpointWithOrWithoutKeys() throws {
        let plain = try Self.parse(#"{"platform":"unifiedpush","endpoint":"https://up.example/UP?token=abc"}"#)
        #expect(plain.destination == .unifiedPush(endpoint: try PushEndpoint("https://up.example/UP?token=abc"), keys: nil))
        let keyed = try Self.parse(
            #"{"platform":"unifiedpush","endpoint":"https://up.example/UP","keys":{"p256dh":"\#(Self.p256dh)","auth":"\#(Self.auth)"}}"#)
        #expect(keyed.destination.keys == (try WebPushSubscriptionKeys(p256dh: Self.p256dh, auth: Self.auth)))
    }

    @Test func eachBadValueIsRefusedWithItsReason() {
        let offCurve = Base64URL.encode([0x04] + [UInt8](repeating: 0xFF, count: 64))
        let keys = #""keys":{"p256dh":"\#(Self.p256dh)","auth":"\#(Self.auth)"}"#
        func webPush(_ endpoint: String, _ keys: String = keys) -> String {
            #"{"platform":"webpush","subscription":{"endpoint":"\#(endpoint)",\#(keys)}}"#
        }
        let cases: [(String, String)] = [
            (#"{"platform":"apple","device_token":"x"}"#, "platform must be one of apns, fcm, webpush, unifiedpush"),
            (#"{"platform":7}"#, "invalid json body: platform must be a string"),
            (
                #"{"device_token":"\#(Self.apnsToken)","apns_environment":"sandbox","push_type":"silent"}"#,
                "push_type must be alert or voip"
            ),
            (#"{"platform":"fcm"}"#, "device_token is required for fcm"),
            (
                #"{"platform":"fcm","device_token":"has spaces and ! marks that no token has at all"}"#,
                "device_token must be an FCM registration token: 32 to 1024 letters, digits, '-', '_' or ':'"
            ),
            (
                #"{"platform":"fcm","device_token":"short:token"}"#,
                "device_token must be an FCM registration token: 32 to 1024 letters, digits, '-', '_' or ':'"
            ),
            (#"{"platform":"webpush"}"#, "subscription is required for webpush: the browser's PushSubscription.toJSON()"),
            (#"{"platform":"webpush","subscription":"https://push.example/x"}"#, "invalid json body: subscription must be an object"),
            (#"{"platform":"webpush","subscription":{\#(keys)}}"#, "subscription.endpoint is required"),
            (#"{"platform":"webpush","subscription":{"endpoint":"https://push.example/x"}}"#, "subscription.keys is required"),
            (webPush("http://push.example/x"), "endpoint must start with https://"),
            (webPush("https://user:pw@push.example/x"), "endpoint must not carry a user name or password"),
            (webPush("https://push.example/x#frag"), "endpoint must not have a fragment (#)"),
            (webPush("https://[::1]/x"), "endpoint names an IPv6 address; use a host name"),
            (webPush("https://push.example:0/x"), "endpoint has an invalid port"),
            (webPush("https://127.1/x"), "endpoint has no valid host name or IP address"),
            (webPush("https://push.example/a b"), "endpoint must be ASCII without spaces"),
            (webPush("https://push.example/%zz"), "endpoint has a % not followed by two hex digits"),
            (webPush("https://push.example/x?t=%4"), "endpoint has a % not followed by two hex digits"),
            (webPush("https://push.example/x%"), "endpoint has a % not followed by two hex digits"),
            (webPush("https://push.example/" + String(repeating: "a", count: 1_024)), "endpoint is longer than 1024 bytes"),
            (webPush("https://push.example/x", #""keys":{"p256dh":"\#(Self.p256dh)"}"#), "subscription.keys must hold p256dh and auth"),
            (
                webPush("https://push.example/x", #""keys":{"p256dh":"\#(Self.p256dh)","auth":"AAAA"}"#),
                "subscription.keys.auth must be 16 bytes, got 3"
            ),
            (
                webPush("https://push.example/x", #""keys":{"p256dh":"\#(Self.auth)","auth":"\#(Self.auth)"}"#),
                "subscription.keys.p256dh must be a 65-byte uncompressed P-256 point (04…), got 16 bytes"
            ),
            (
                webPush("https://push.example/x", #""keys":{"p256dh":"\#(offCurve)","auth":"\#(Self.auth)"}"#),
                "subscription.keys.p256dh is not a point on P-256"
            ),
            (
                webPush("https://push.example/x", #""keys":{"p256dh":"\#(Self.p256dh)=","auth":"\#(Self.auth)"}"#),
                "subscription.keys.p256dh must be base64url without padding"
            ),
            (#"{"platform":"unifiedpush"}"#, "endpoint is required for unifiedpush"),
            (#"{"platform":"unifiedpush","endpoint":"https://up.example/x","keys":[]}"#, "invalid json body: keys must be an object"),
            (
                #"{"platform":"unifiedpush","endpoint":"https://up.example/x","keys":{"auth":"\#(Self.auth)"}}"#,
                "keys must hold p256dh and auth"
            ),
        ]
        for (json, message) in cases {
            #expect(Self.refusal(json) == message, "\(json)")
        }
    }

    @Test func unregisterTakesATokenOrAnEndpoint() throws {
        func parse(_ json: String) throws(RequestBodyError) -> String {
            try UnregisterDeviceRequest.parse(Array(json.utf8)).deviceToken
        }
        #expect(try parse(#"{"device_token":"\#(Self.apnsToken.uppercased())"}"#) == Self.apnsToken)
        #expect(try parse(#"{"device_token":"\#(Self.fcmToken)"}"#) == Self.fcmToken)
        #expect(try parse(#"{"endpoint":"\#(Self.endpoint)"}"#) == "https://push.example/wpush/v2/gAAAAABk-abc_123?x=1")
        #expect(throws: RequestBodyError("device_token or endpoint is required")) { try parse("{}") }
        #expect(throws: RequestBodyError("give device_token or endpoint, not both")) {
            try parse(#"{"device_token":"\#(Self.apnsToken)","endpoint":"\#(Self.endpoint)"}"#)
        }
        #expect(throws: RequestBodyError("endpoint must start with https://")) { try parse(#"{"endpoint":"ftp://x.example/"}"#) }
    }

    @Test func anEndpointIsRedactedToItsOriginInLogs() {
        #expect(DeviceToken.redacted("https://push.example/wpush/v2/secretpart123456") == "https://push.example/…123456")
        #expect(DeviceToken.redacted(Self.apnsToken) == "…ababab")
    }
}
