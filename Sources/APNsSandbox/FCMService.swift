import Crypto
import CryptoExtras
package import Foundation
package import NostrProtocol
import Synchronization

/// The sandbox's FCM face: Google's OAuth token endpoint and FCM HTTP v1 `messages:send`, under
/// `/fcm/` on the sandbox's port, with a service account of its own.
///
/// - `POST /fcm/token` exchanges a JWT-bearer assertion (form `grant_type`, `assertion`) for an
///   access token when the assertion verifies against the account's key (`FCMAssertionVerifier`);
///   otherwise 400 `invalid_grant`, as Google answers.
/// - `POST /fcm/v1/projects/<project>/messages:send` needs a live access token (401
///   `UNAUTHENTICATED` otherwise) and this project (403 `PERMISSION_DENIED`), checks the message
///   as FCM does (400 `INVALID_ARGUMENT` naming the field), plays `FCMScriptedFailure`s, and
///   answers `{"name": "projects/<project>/messages/<id>"}`. Errors are Google's JSON, with the
///   `FcmError` and `BadRequest` details firebase-admin reads.
/// - `GET /fcm/deliveries` lists what was recorded (`DELETE` clears it); `GET /fcm/stats` counts
///   token exchanges and messages delivered; `POST /fcm/control/revoke-tokens` makes every access token issued so far
///   invalid, as a rotated key would; `GET /fcm/service-account` is the key file.
package final class FCMService: SandboxFace {
    /// One `messages:send` as the sandbox answered it.
    package struct Delivery: Sendable {
        package var sequence: Int
        package var token: String?
        package var status: Int
        /// FCM's errorCode, or Google's canonical status.
        package var reason: String?
        /// The request's `message` object, as sent.
        package var message: JSONValue?
        /// The request's headers that a client chooses (`x-goog-api-format-version`,
        /// `x-firebase-client`, `content-type`), for comparing clients' requests.
        package var headers: [String: String]
        /// When the request arrived (the sandbox's clock), for tests that time retries.
        package var receivedAt: Date

        var json: JSONValue {
            var fields: [String: JSONValue] = [
                "sequence": .integer(Int64(sequence)), "status": .integer(Int64(status)),
                "headers": .object(headers.mapValues { .string($0) }),
            ]
            if let token { fields["token"] = .string(token) }
            if let reason { fields["reason"] = .string(reason) }
            if let message { fields["message"] = message }
            return .object(fields)
        }
    }

    package let projectID: String
    package let clientEmail: String
    let privateKeyID: String
    let privateKey: _RSA.Signing.PrivateKey
    let tokenLifetimeSeconds: Int
    private let verifier: FCMAssertionVerifier
    private struct State {
        var tokens: [String: Date] = [:]
        var exchanges = 0
        var refusedExchanges = 0
        var played: [String: Int] = [:]
        var deliveries: [Delivery] = []
        /// Sends answered 200 since the sandbox started (deliveries are trimmed; this is not).
        var delivered = 0
    }
    private let state = Mutex(State())
    /// At most this many tokens and deliveries are kept (a load run must not fill memory).
    static let limit = 100_000
    /// What a scripted 429 asks for: longer than the gateway's first backoff (2 to 2.4 s), so a
    /// retry that waited it out shows the header was read.
    package static let quotaRetryAfterSeconds = 3
    static let recordedHeaders = ["x-goog-api-format-version", "x-firebase-client", "content-type"]

    package init(projectID: String, tokenLifetimeSeconds: Int) throws {
        self.projectID = projectID
        self.tokenLifetimeSeconds = tokenLifetimeSeconds
        clientEmail = "push-gateway@\(projectID).iam.gserviceaccount.com"
        privateKeyID = Hex.encode(SecureRandom.bytes(20))
        privateKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        verifier = FCMAssertionVerifier(publicKey: privateKey.publicKey, clientEmail: clientEmail)
    }

    /// The service account key file, as the Firebase console issues it, with `token_uri` naming
    /// this face at `origin` (`https://host:port`).
    package func serviceAccountJSON(origin: String) -> String {
        JSONValue.object([
            "type": "service_account", "project_id": .string(projectID), "private_key_id": .string(privateKeyID),
            "private_key": .string(privateKey.pkcs8PEMRepresentation), "client_email": .string(clientEmail),
            "client_id": "100000000000000000000", "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": .string(origin + "/fcm/token"),
        ]).serialized
    }

    package func answer(
        method: String, path: String, query: [String: String], headers: [(name: String, value: String)], body: [UInt8],
        authority: String, now: Date = Date()
    ) -> (status: Int, json: JSONValue?, headers: [(String, String)]) {
        let origin = "https://" + authority
        switch (method, path) {
        case ("POST", "/fcm/token"):
            return exchange(body: body, now: now)
        case ("GET", "/fcm/deliveries"):
            return (200, .array(state.withLock { $0.deliveries }.map(\.json)), [])
        case ("DELETE", "/fcm/deliveries"):
            state.withLock { $0.deliveries.removeAll() }
            return (200, ["status": "reset"], [])
        case ("GET", "/fcm/stats"):
            let (exchanges, refused, live, delivered) = state.withLock {
                ($0.exchanges, $0.refusedExchanges, $0.tokens.count, $0.delivered)
            }
            return (
                200,
                [
                    "token_exchanges": .integer(Int64(exchanges)), "refused_exchanges": .integer(Int64(refused)),
                    "live_tokens": .integer(Int64(live)), "delivered": .integer(Int64(delivered)),
                ], []
            )
        case ("POST", "/fcm/control/revoke-tokens"):
            state.withLock { $0.tokens.removeAll() }
            return (200, ["status": "revoked"], [])
        case ("GET", "/fcm/service-account"):
            return (200, try? JSONValue(parsing: serviceAccountJSON(origin: origin)), [])
        case ("POST", _) where path.hasPrefix("/fcm/v1/projects/") && path.hasSuffix("/messages:send"):
            let project = String(path.dropFirst("/fcm/v1/projects/".count).dropLast("/messages:send".count))
            return send(project: project, headers: headers, body: body, now: now)
        default:
            return (404, Self.googleError(404, "NOT_FOUND", "no such FCM route"), [])
        }
    }

    /// Exchanges counted so far (refused ones included).
    package var exchanges: Int { state.withLock { $0.exchanges } }

    package var recorded: [Delivery] { state.withLock { $0.deliveries } }

    private func exchange(body: [UInt8], now: Date) -> (status: Int, json: JSONValue?, headers: [(String, String)]) {
        var form: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.replacingOccurrences(of: "+", with: " ").removingPercentEncoding }
            if parts.count == 2, let name = parts[0], let value = parts[1] { form[name] = value }
        }
        func refuse(_ error: String, _ description: String) -> (Int, JSONValue?, [(String, String)]) {
            state.withLock {
                $0.exchanges += 1
                $0.refusedExchanges += 1
            }
            return (400, ["error": .string(error), "error_description": .string(description)], [])
        }
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return refuse("unsupported_grant_type", "Invalid grant_type: \(form["grant_type"]?.prefix(80) ?? "")")
        }
        guard let assertion = form["assertion"] else { return refuse("invalid_request", "Missing required parameter: assertion") }
        if let refusal = verifier.refusal(of: assertion, now: now) { return refuse("invalid_grant", refusal) }
        let token = "ya29.sandbox-" + Base64URL.encode(SecureRandom.bytes(24))
        state.withLock { state in
            state.exchanges += 1
            if state.tokens.count >= Self.limit {
                state.tokens = state.tokens.filter { $0.value > now }
                // Still full of live tokens: the oldest half goes, as a token endpoint under a flood would.
                if state.tokens.count >= Self.limit {
                    let cut = state.tokens.values.sorted()[state.tokens.count / 2]
                    state.tokens = state.tokens.filter { $0.value > cut }
                }
            }
            state.tokens[token] = now.addingTimeInterval(TimeInterval(tokenLifetimeSeconds))
        }
        return (200, ["access_token": .string(token), "expires_in": .integer(Int64(tokenLifetimeSeconds)), "token_type": "Bearer"], [])
    }

    private func send(project: String, headers: [(name: String, value: String)], body: [UInt8], now: Date)
        -> (status: Int, json: JSONValue?, headers: [(String, String)])
    {
        func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
        let request = try? JSONValue(parsing: body)
        let message = request?["message"]
        // A message is kept only from an authenticated sender and at most 8 KB of it: a record
        // for anyone's request would let any client fill the sandbox's memory.
        var delivery = Delivery(
            sequence: 0, token: message?["token"]?.stringValue.map { String($0.prefix(1024)) }, status: 200, message: nil,
            headers: Dictionary(Self.recordedHeaders.compactMap { name in header(name).map { (name, String($0.prefix(200))) } }) { $1 },
            receivedAt: now)
        defer { record(delivery) }
        func refuse(
            _ status: Int, _ canonical: String, _ text: String, errorCode: String? = nil, field: String? = nil,
            extra: [(String, String)] = []
        ) -> (Int, JSONValue?, [(String, String)]) {
            delivery.status = status
            delivery.reason = errorCode ?? canonical
            return (status, Self.googleError(status, canonical, text, errorCode: errorCode, field: field), extra)
        }
        let bearer = header("authorization").flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        let valid = bearer.map { token in state.withLock { $0.tokens[token].map { $0 > now } ?? false } } ?? false
        if valid, body.count <= 8 * 1024 { delivery.message = message }
        guard valid else {
            return refuse(
                401, "UNAUTHENTICATED",
                "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."
            )
        }
        guard project == projectID else {
            return refuse(
                403, "PERMISSION_DENIED",
                "Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/\(project.prefix(64))'"
            )
        }
        guard let message, message.objectValue != nil else {
            return refuse(400, "INVALID_ARGUMENT", "Request contains an invalid argument.", errorCode: "INVALID_ARGUMENT", field: "message")
        }
        if let field = Self.invalidField(message, bodyBytes: body.count) {
            return refuse(400, "INVALID_ARGUMENT", "Invalid value at '\(field)'", errorCode: "INVALID_ARGUMENT", field: field)
        }
        if let token = delivery.token, let script = FCMScriptedFailure(token: token) {
            let fails = state.withLock { state -> Bool in
                if let limit = script.failures, state.played[token, default: 0] >= limit { return false }
                if state.played.count >= Self.limit { state.played.removeAll() }
                state.played[token, default: 0] += 1
                return true
            }
            if fails {
                let answer = script.answer
                // A scripted stall: recorded, and the stream left unanswered.
                if answer.status == SandboxFaces.noAnswer {
                    delivery.status = answer.status
                    return (answer.status, nil, [])
                }
                return refuse(
                    answer.status, answer.canonical, answer.message, errorCode: answer.errorCode,
                    field: script == .invalidMessage ? "message.android.ttl" : nil,
                    extra: answer.status == 429 ? [("retry-after", String(Self.quotaRetryAfterSeconds))] : [])
            }
        }
        return (200, ["name": .string("projects/\(projectID)/messages/\(UUID().uuidString.lowercased())")], [])
    }

    /// The first field FCM would refuse, or nil: one target, string data, a known priority, a
    /// duration ttl, string notification fields, at most 4 KB.
    static func invalidField(_ message: JSONValue, bodyBytes: Int) -> String? {
        let targets = ["token", "topic", "condition"].filter { message[$0] != nil }
        guard targets.count == 1 else { return "message" }
        if let token = message["token"], token.stringValue?.isEmpty != false { return "message.token" }
        if let data = message["data"] {
            guard let fields = data.objectValue, fields.values.allSatisfy({ $0.stringValue != nil }) else { return "message.data" }
            let reserved = fields.keys.contains { $0 == "from" || $0 == "message_type" || $0.hasPrefix("google") || $0.hasPrefix("gcm") }
            if reserved { return "message.data" }
        }
        if let notification = message["notification"] {
            guard let fields = notification.objectValue, fields.values.allSatisfy({ $0.stringValue != nil }) else {
                return "message.notification"
            }
        }
        if let android = message["android"] {
            guard android.objectValue != nil else { return "message.android" }
            if let priority = android["priority"], !["normal", "high"].contains(priority.stringValue?.lowercased() ?? "") {
                return "message.android.priority"
            }
            if let ttl = android["ttl"], !isDuration(ttl.stringValue ?? "") { return "message.android.ttl" }
            if let key = android["collapse_key"], key.stringValue == nil { return "message.android.collapse_key" }
        }
        return bodyBytes > 4096 + 1024 ? "message" : nil
    }

    /// Protobuf's JSON duration: seconds with up to nine decimals, then `s`.
    static func isDuration(_ text: String) -> Bool {
        guard text.hasSuffix("s") else { return false }
        let number = text.dropLast().split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(number.count), let whole = number.first, !whole.isEmpty, whole.allSatisfy(\.isASCII),
            whole.allSatisfy(\.isNumber)
        else { return false }
        guard number.count == 2 else { return true }
        return (1...9).contains(number[1].count) && number[1].allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// Google's error JSON: `{"error": {"code", "message", "status", "details"}}`.
    static func googleError(_ code: Int, _ status: String, _ message: String, errorCode: String? = nil, field: String? = nil) -> JSONValue {
        var details: [JSONValue] = []
        if let errorCode {
            details.append(["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": .string(errorCode)])
        }
        if let field {
            details.append([
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [["field": .string(field), "description": .string(message)]],
            ])
        }
        return [
            "error": [
                "code": .integer(Int64(code)), "message": .string(message), "status": .string(status), "details": .array(details),
            ]
        ]
    }

    private func record(_ delivery: Delivery) {
        state.withLock { state in
            if state.deliveries.count >= Self.limit { state.deliveries.removeFirst(state.deliveries.count / 2) }
            var numbered = delivery
            numbered.sequence = (state.deliveries.last?.sequence ?? 0) + 1
            state.deliveries.append(numbered)
            if delivery.status == 200 { state.delivered += 1 }
        }
    }
}
