import APNsSandbox
import Foundation
import GatewayWire
import NIOCore
import NostrProtocol
import PushGateway
import Testing

/// The FCM transport's pure parts (what each answer means, the message built from a job, the
/// service account and settings), and the sandbox's FCM face as a value: its token endpoint
/// against the gateway's assertions, its message checks and its scripts.
struct FCMTransportTests {
    @Test(
        arguments: [
            (200, FCMResponseClassifier.ErrorBody(), PushOutcome.delivered),
            (
                404, .init(errorCode: "UNREGISTERED", status: "NOT_FOUND"),
                .removeDevice(reason: "UNREGISTERED", invalidSinceMilliseconds: nil)
            ),
            (
                400, .init(errorCode: "INVALID_ARGUMENT", status: "INVALID_ARGUMENT", refusesToken: true),
                .removeDevice(reason: "INVALID_ARGUMENT", invalidSinceMilliseconds: nil)
            ),
            (400, .init(errorCode: "INVALID_ARGUMENT", status: "INVALID_ARGUMENT"), .drop(reason: "INVALID_ARGUMENT")),
            (403, .init(errorCode: "SENDER_ID_MISMATCH", status: "PERMISSION_DENIED"), .configurationError(reason: "SENDER_ID_MISMATCH")),
            (
                401, .init(errorCode: "THIRD_PARTY_AUTH_ERROR", status: "UNAUTHENTICATED"),
                .configurationError(reason: "THIRD_PARTY_AUTH_ERROR")
            ),
            (401, .init(errorCode: "APNS_AUTH_ERROR"), .configurationError(reason: "APNS_AUTH_ERROR")),
            (403, .init(status: "PERMISSION_DENIED"), .configurationError(reason: "PERMISSION_DENIED")),
            (404, .init(status: "NOT_FOUND"), .configurationError(reason: "NOT_FOUND")),
            (401, .init(status: "UNAUTHENTICATED"), .refreshTokenAndRetry(reason: "UNAUTHENTICATED")),
            (429, .init(errorCode: "QUOTA_EXCEEDED", status: "RESOURCE_EXHAUSTED"), .retry(reason: "QUOTA_EXCEEDED", afterSeconds: 7)),
            (503, .init(status: "UNAVAILABLE"), .retry(reason: "UNAVAILABLE", afterSeconds: 7)),
            (500, .init(errorCode: "INTERNAL", status: "INTERNAL"), .retry(reason: "INTERNAL", afterSeconds: 7)),
            (502, .init(), .retry(reason: "HTTP 502", afterSeconds: 7)),
            (418, .init(), .drop(reason: "HTTP 418")),
        ] as [(Int, FCMResponseClassifier.ErrorBody, PushOutcome)])
    func eachAnswerHasItsOutcome(status: Int, error: FCMResponseClassifier.ErrorBody, expected: PushOutcome) {
        #expect(FCMResponseClassifier.classify(status: status, error: error, retryAfterSeconds: 7) == expected)
    }

    @Test func googlesErrorJSONIsReadForItsCodesOnly() {
        let unregistered = #"""
            {"error": {"code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND",
              "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}]}}
            """#
        #expect(
            FCMResponseClassifier.ErrorBody(parsing: Array(unregistered.utf8))
                == .init(errorCode: "UNREGISTERED", status: "NOT_FOUND", refusesToken: false))
        let badToken = #"""
            {"error": {"code": 400, "message": "The registration token is not a valid FCM registration token",
              "status": "INVALID_ARGUMENT", "details": [
                {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "INVALID_ARGUMENT"},
                {"@type": "type.googleapis.com/google.rpc.BadRequest",
                 "fieldViolations": [{"field": "message.token", "description": "Invalid registration token"}]}]}}
            """#
        #expect(FCMResponseClassifier.ErrorBody(parsing: Array(badToken.utf8)).refusesToken)
        // FCM's answer to a malformed or foreign token names no field: its message says it.
        let realBadToken = #"""
            {"error": {"code": 400, "message": "The registration token is not a valid FCM registration token",
              "status": "INVALID_ARGUMENT",
              "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "INVALID_ARGUMENT"}]}}
            """#
        #expect(FCMResponseClassifier.ErrorBody(parsing: Array(realBadToken.utf8)).refusesToken)
        // A field of the message named: the gateway's own bug, and no reason to remove the device.
        let badField = #"""
            {"error": {"code": 400, "message": "Invalid value at 'message.android.ttl' (registration token fine)", "status": "INVALID_ARGUMENT",
              "details": [{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [{"field": "message.android.ttl"}]}]}}
            """#
        #expect(!FCMResponseClassifier.ErrorBody(parsing: Array(badField.utf8)).refusesToken)
        // Codes the gateway does not know become OTHER: they are metric labels.
        let hostile =
            #"{"error": {"status": "DROP TABLE devices; --", "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "\u001b[31mred"}]}}"#
        #expect(FCMResponseClassifier.ErrorBody(parsing: Array(hostile.utf8)) == .init(errorCode: "OTHER", status: "OTHER"))
        #expect(FCMResponseClassifier.ErrorBody(parsing: Array("<html>502</html>".utf8)) == .init())
    }

    static func job(_ notification: APNsNotification, expiresIn seconds: TimeInterval, now: Date) -> ClaimedJob {
        ClaimedJob(
            id: 1, apnsID: UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!, destination: .fcm(token: "tok"), pubkey: "p",
            topic: "app", deviceUpdatedAt: now, notification: notification, attempts: 1, expiresAt: now.addingTimeInterval(seconds))
    }

    @Test func anAlertIsANotificationWithItsIdsAsStringData() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let message = FCMMessage(
            Self.job(APNsNotification(type: .mention, eventID: "e1", conversationID: "c1"), expiresIn: 600, now: now), token: "tok",
            now: now
        ).body
        #expect(message["message"]?["token"] == "tok")
        #expect(
            message["message"]?["notification"] == [
                "title": "You were mentioned", "body": .string(APNsNotification(type: .mention, eventID: "", conversationID: "").body),
            ])
        let data = try #require(message["message"]?["data"]?.objectValue)
        #expect(data["type"] == "mention" && data["event_id"] == "e1" && data["conversation_id"] == "c1")
        #expect(data["push_id"] == "6f9619ff-8b86-d011-b42d-00c04fc964ff", "the job's id: the same on every retry")
        #expect(data.values.allSatisfy { $0.stringValue != nil }, "FCM's data map holds strings only")
        let android = try #require(message["message"]?["android"])
        #expect(android["priority"] == "high")
        #expect(android["ttl"] == "600s")
        #expect(android["collapse_key"] == nil, "FCM keeps four collapse keys a device: a typed push must not take one")
        #expect(android["notification"] == ["tag": "e1"], "shown once per event, as APNs collapses it by its collapse id")
    }

    @Test func aCallIsAShortLivedHighPriorityDataMessageWithoutCollapse() throws {
        let now = Date()
        let message = FCMMessage(
            Self.job(APNsNotification(type: .incomingCall, eventID: "call", conversationID: "c"), expiresIn: 600, now: now), token: "tok",
            now: now
        ).body["message"]
        #expect(message?["notification"] == nil, "the app rings itself")
        #expect(message?["android"]?["priority"] == "high")
        #expect(message?["android"]?["ttl"] == "30s")
        #expect(message?["android"]?["collapse_key"] == nil, "every call rings")
        #expect(message?["data"]?["type"] == "incoming_call")
    }

    @Test func aBackgroundPushIsANormalPriorityDataMessageWithoutText() throws {
        let now = Date()
        let notification = APNsNotification(type: .newMessage, eventID: "e", conversationID: "c", background: true)
        let message = FCMMessage(Self.job(notification, expiresIn: 90, now: now), token: "tok", now: now).body["message"]
        #expect(message?["notification"] == nil && message?["android"]?["notification"] == nil)
        #expect(message?["android"]?["priority"] == "normal")
        #expect(message?["data"]?["background"] == "1")
        #expect(message?["data"]?["title"] == nil && message?["data"]?["body"] == nil)
    }

    @Test func aRelayWatchAlertCarriesItsCountAsAString() throws {
        let now = Date()
        let notification = APNsNotification.giftWrap(wrapID: "w1", relay: "wss://relay.example", count: 3, recipient: "bob")
        let message = FCMMessage(Self.job(notification, expiresIn: 60, now: now), token: "tok", now: now).body["message"]
        #expect(message?["data"]?["count"] == "3")
        #expect(message?["android"]?["collapse_key"] == "bob", "a burst of new activity for one user is one message")
        #expect(message?["android"]?["notification"]?["tag"] == "bob", "and one notification on screen")
        #expect(message?["data"]?["wrap_id"] == "w1")
        #expect(message?["notification"]?["body"] == "New activity")
    }

    /// The devices of one push share a shape: each message made of its pieces is byte for byte the
    /// message built whole, for every kind of push. A notification whose own ids hold a mark, or a
    /// token JSON would escape, gets no pieces (the sender then builds that message whole).
    @Test func aShapesMessagesAreTheWholeMessagesByteForByte() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let notifications = [
            APNsNotification(type: .mention, eventID: "e1", conversationID: "c1"),
            APNsNotification(type: .incomingCall, eventID: "call", conversationID: "c"),
            APNsNotification(type: .newMessage, eventID: "e", conversationID: "c", background: true),
            APNsNotification.giftWrap(wrapID: "w1", relay: "wss://relay.example", count: 3, recipient: "bob"),
        ]
        for notification in notifications {
            let first = Self.job(notification, expiresIn: 600, now: now)
            let shape = FCMMessageShape(job: first, now: now)
            for seed in 0..<3 {
                var job = first
                job.apnsID = UUID()
                let token = "cZ1q2-Xy_3:APA91bH\(seed)"
                #expect(shape.fits(job))
                let body = try #require(shape.body(token: token, pushID: job.apnsID.uuidString.lowercased()))
                #expect(String(buffer: body) == FCMMessage(job, token: token, now: now).body.serialized, "\(notification.type)")
            }
            #expect(!shape.fits(Self.job(notification, expiresIn: 601, now: now)), "another expiry is another ttl")
            #expect(shape.body(token: "to\"k", pushID: "id") == nil, "a token JSON must escape")
        }
        let other = APNsNotification(type: .mention, eventID: "e2", conversationID: "c1")
        #expect(
            !FCMMessageShape(job: Self.job(notifications[0], expiresIn: 600, now: now), now: now).fits(
                Self.job(other, expiresIn: 600, now: now)))
        for mark in [FCMMessageShape.tokenMark, FCMMessageShape.pushIDMark] {
            let marked = Self.job(APNsNotification(type: .mention, eventID: mark, conversationID: "c"), expiresIn: 600, now: now)
            #expect(FCMMessageShape(job: marked, now: now).body(token: "tok", pushID: "id") == nil, "a client's id holding \(mark)")
        }
    }

    static let sandboxAccount: (service: FCMService, json: String) = {
        let service = try! FCMService(projectID: "unit-project", tokenLifetimeSeconds: 3600)
        return (service, service.serviceAccountJSON(origin: "https://localhost:1"))
    }()

    @Test func aServiceAccountFileIsReadAndItsProblemsNamedWithoutItsKey() throws {
        let account = try FCMServiceAccount(json: Self.sandboxAccount.json)
        #expect(account.projectID == "unit-project")
        #expect(account.tokenURI == "https://localhost:1/fcm/token")
        #expect(account.privateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let fields = try #require(try JSONValue(parsing: Self.sandboxAccount.json).objectValue)
        func variant(_ change: (inout [String: JSONValue]) -> Void) -> String {
            var copy = fields
            change(&copy)
            return JSONValue.object(copy).serialized
        }
        let cases: [(String, String)] = [
            ("[]", "not a JSON object (expected a service account key file)"),
            (variant { $0["type"] = "authorized_user" }, #"type is "authorized_user", expected "service_account""#),
            (variant { $0["project_id"] = nil }, "project_id is missing"),
            (variant { $0["project_id"] = "../../admin" }, "project_id must be lowercase letters, digits and '-'"),
            (variant { $0["client_email"] = "" }, "client_email is missing"),
            (variant { $0["private_key"] = nil }, "private_key is missing"),
            (variant { $0["token_uri"] = "http://oauth2.googleapis.com/token" }, "token_uri must be an https URL"),
        ]
        for (text, message) in cases {
            #expect(throws: FCMServiceAccountError(message)) { try FCMServiceAccount(json: text) }
        }
        var broken = account
        broken.privateKeyPEM = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
        #expect(throws: FCMServiceAccountError("private_key is not an RSA private key of 2048 bits or more in PEM")) {
            try FCMAssertionSigner(account: broken)
        }
    }

    @Test func settingsComeFromTheEnvironmentAndABadFileStopsStartUp() throws {
        let directory = FileManager.default.temporaryDirectory
        let good = directory.appendingPathComponent("fcm-unit-\(UUID().uuidString).json").path
        let bad = directory.appendingPathComponent("fcm-unit-\(UUID().uuidString).json").path
        try Self.sandboxAccount.json.write(toFile: good, atomically: true, encoding: .utf8)
        try Self.sandboxAccount.json.replacingOccurrences(of: "BEGIN PRIVATE KEY-----\\n", with: "BEGIN PRIVATE KEY-----\\nAA").write(
            toFile: bad, atomically: true, encoding: .utf8)
        defer {
            try? FileManager.default.removeItem(atPath: good)
            try? FileManager.default.removeItem(atPath: bad)
        }
        let base = ["DATABASE_URL": "postgres://u:p@127.0.0.1:5432/db", "APNS_DISABLE": "1"]
        let off = try GatewayConfiguration.fromEnvironment(base)
        #expect(!off.fcm.enabled && !off.platforms.contains(.fcm))
        let on = try GatewayConfiguration.fromEnvironment(
            base.merging([
                "FCM_SERVICE_ACCOUNT_FILE": good, "FCM_API_URL": "https://fcm.example/", "FCM_TOKEN_URL": "https://token.example/t",
            ]) { $1 })
        #expect(on.platforms.contains(.fcm))
        #expect(on.fcm.sendURL == "https://fcm.example/v1/projects/unit-project/messages:send")
        #expect(on.fcm.effectiveTokenURL == "https://token.example/t")
        #expect(on.fcm.connections == FCMSettings.defaultConnections)
        let four = try GatewayConfiguration.fromEnvironment(
            base.merging(["FCM_SERVICE_ACCOUNT_FILE": good, "FCM_CONNECTIONS": "4"]) { $1 })
        #expect(four.fcm.connections == 4)
        let refusals: [([String: String], ConfigurationError)] = [
            (
                ["FCM_SERVICE_ACCOUNT_FILE": "/nonexistent/account.json"],
                ConfigurationError(key: "FCM_SERVICE_ACCOUNT_FILE", "cannot read /nonexistent/account.json")
            ),
            (
                ["FCM_SERVICE_ACCOUNT_FILE": bad],
                ConfigurationError(
                    key: "FCM_SERVICE_ACCOUNT_FILE", "\(bad): private_key is not an RSA private key of 2048 bits or more in PEM")
            ),
            (["FCM_API_URL": "http://fcm.example"], ConfigurationError(key: "FCM_API_URL", "an https URL")),
            (["FCM_TOKEN_URL": "token.example"], ConfigurationError(key: "FCM_TOKEN_URL", "an https URL")),
            (["FCM_CONNECTIONS": "0"], ConfigurationError(key: "FCM_CONNECTIONS", "an integer in 1...64")),
            (["FCM_CONNECTIONS": "two"], ConfigurationError(key: "FCM_CONNECTIONS", "an integer in 1...64")),
        ]
        for (extra, error) in refusals {
            #expect(throws: error) { try GatewayConfiguration.fromEnvironment(base.merging(extra) { $1 }) }
        }
    }

    @Test func scriptsAreChosenByTheTokensFirstLetters() {
        #expect(FCMScriptedFailure(token: "unregistered-x") == .unregistered)
        #expect(FCMScriptedFailure(token: "invalid-x") == .invalidToken)
        #expect(FCMScriptedFailure(token: "badmessage-x") == .invalidMessage)
        #expect(FCMScriptedFailure(token: "mismatch") == .senderIDMismatch)
        #expect(FCMScriptedFailure(token: "thirdparty:x") == .thirdPartyAuthError)
        #expect(FCMScriptedFailure(token: "quota3-x") == .quotaExceeded(times: 3))
        #expect(FCMScriptedFailure(token: "unavailable1") == .unavailable(times: 1))
        #expect(FCMScriptedFailure(token: "internal9") == .internalError(times: 9))
        #expect(FCMScriptedFailure(token: "stall-x") == .stall)
        #expect(FCMScriptedFailure(token: "quota-x") == nil, "a count is required")
        #expect(FCMScriptedFailure(token: "cZ1q2-Xy_3:APA91bH") == nil)
    }

    /// The face's token endpoint takes the gateway's assertion and refuses a forged, stale or
    /// foreign one as Google does (400 `invalid_grant`).
    @Test func theFacesTokenEndpointChecksTheAssertion() throws {
        let (service, json) = Self.sandboxAccount
        let account = try FCMServiceAccount(json: json)
        let signer = try FCMAssertionSigner(account: account)
        let now = Date()
        func exchange(_ assertion: String, at date: Date = now) -> (Int, JSONValue?) {
            let body = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
            let answer = service.answer(
                method: "POST", path: "/fcm/token", query: [:], headers: [], body: Array(body.utf8), authority: "localhost:1", now: date)
            return (answer.status, answer.json)
        }
        let good = try signer.assertion(issuedAt: now)
        let (status, answer) = exchange(good)
        #expect(status == 200)
        #expect(answer?["expires_in"] == 3600 && answer?["token_type"] == "Bearer")
        #expect(answer?["access_token"]?.stringValue?.isEmpty == false)

        var parts = good.split(separator: ".").map(String.init)
        parts[2] = (parts[2].first == "A" ? "B" : "A") + parts[2].dropFirst()
        #expect(exchange(parts.joined(separator: ".")).1?["error_description"] == "Invalid JWT Signature.")
        #expect(exchange(try signer.assertion(issuedAt: now.addingTimeInterval(-7200))).1?["error"] == "invalid_grant", "expired")
        var foreign = account
        foreign.clientEmail = "someone@else.iam.gserviceaccount.com"
        #expect(exchange(try FCMAssertionSigner(account: foreign).assertion(issuedAt: now)).0 == 400, "another account's iss")
        let wrongGrant = service.answer(
            method: "POST", path: "/fcm/token", query: [:], headers: [], body: Array("grant_type=password&assertion=\(good)".utf8),
            authority: "localhost:1", now: now)
        #expect(wrongGrant.json?["error"] == "unsupported_grant_type")
    }

    /// `messages:send` refuses what FCM refuses, naming the field.
    @Test func theFacesSendChecksTheMessage() throws {
        let (service, json) = Self.sandboxAccount
        let assertion = try FCMAssertionSigner(account: try FCMServiceAccount(json: json)).assertion(issuedAt: Date())
        let exchanged = service.answer(
            method: "POST", path: "/fcm/token", query: [:], headers: [],
            body: Array("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)".utf8), authority: "l",
            now: Date())
        let token = try #require(exchanged.json?["access_token"]?.stringValue)
        func send(_ message: String, project: String = "unit-project", bearer: String? = nil) -> (Int, JSONValue?) {
            let answer = service.answer(
                method: "POST", path: "/fcm/v1/projects/\(project)/messages:send", query: [:],
                headers: [("authorization", "Bearer \(bearer ?? token)")], body: Array(#"{"message":\#(message)}"#.utf8), authority: "l",
                now: Date())
            return (answer.status, answer.json)
        }
        func field(_ answer: (Int, JSONValue?)) -> String? {
            answer.1?["error"]?["details"]?.arrayValue?.compactMap { $0["fieldViolations"]?.arrayValue?.first?["field"]?.stringValue }.first
        }
        #expect(send(#"{"token":"t","data":{"a":"b"},"android":{"priority":"high","ttl":"30s"}}"#).0 == 200)
        #expect(send(#"{"token":"t"}"#, bearer: "ya29.forged").0 == 401)
        #expect(send(#"{"token":"t"}"#, project: "someone-else").1?["error"]?["status"] == "PERMISSION_DENIED")
        #expect(field(send(#"{"token":"t","topic":"news"}"#)) == "message")
        #expect(field(send(#"{"token":"t","data":{"count":3}}"#)) == "message.data", "data values are strings")
        #expect(field(send(#"{"token":"t","data":{"google.x":"y"}}"#)) == "message.data", "a reserved key")
        #expect(field(send(#"{"token":"t","android":{"priority":"urgent"}}"#)) == "message.android.priority")
        #expect(field(send(#"{"token":"t","android":{"ttl":"30"}}"#)) == "message.android.ttl")
        #expect(field(send(#"{"token":"badmessage-t"}"#)) == "message.android.ttl")
        let invalid = send(#"{"token":"invalid-t"}"#)
        #expect(invalid.0 == 400 && field(invalid) == nil, "FCM names no field for a bad token")
    }
}
