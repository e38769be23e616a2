import Crypto
package import Foundation
package import NostrProtocol
import Synchronization
import WebPush

/// The sandbox's Web Push face: a push service look-alike under `/webpush/`, served on the same
/// HTTP/2 TLS port as the APNs face.
///
/// - `POST /webpush/subscriptions` makes a subscription as a browser's push service would and
///   answers `PushSubscription.toJSON()`: `{endpoint, keys: {p256dh, auth}}`. The sandbox keeps
///   the private key and auth secret. `?answer=410` (or 403, 404, 413, 429, 500, 503) scripts the
///   answer its deliveries get, `&times=N` for the first N only, `&retry_after=S` on 429 and 5xx.
///   `?plain=1` makes a UnifiedPush endpoint without keys, which takes the body as it is.
///   `?stall=1` makes one that never answers: the request is recorded and left hanging, as a
///   hostile or broken service would.
/// - `POST /webpush/push/<id>` is a delivery: the VAPID JWT must verify (signature, `aud` this
///   origin, `exp` within 24 hours, `sub`) and `TTL` must be present; the `aes128gcm` body is
///   decrypted and its plaintext recorded, then answered 201.
/// - `GET /webpush/deliveries` lists what was recorded; `DELETE` clears it. `GET /webpush/stats`
///   counts deliveries and subscriptions.
package final class WebPushService: SandboxFace {
    struct Subscription: Sendable {
        var receiverKey: P256.KeyAgreement.PrivateKey?
        var authSecret: [UInt8]
        var answer: Int?
        var times: Int?
        var retryAfter: Int?
        var answered = 0
        var stalls = false
    }

    /// One delivery as the sandbox answered it.
    package struct Delivery: Sendable {
        package var sequence: Int
        package var subscription: String
        package var status: Int
        package var reason: String?
        package var plaintext: String?
        package var ttl: String?
        package var urgency: String?
        package var topic: String?
        package var vapidKey: String?
        /// When the request arrived (the sandbox's clock), for tests that time retries.
        package var receivedAt: Date

        var json: JSONValue {
            var fields: [String: JSONValue] = [
                "sequence": .integer(Int64(sequence)), "subscription": .string(subscription), "status": .integer(Int64(status)),
            ]
            for (name, value) in [
                ("reason", reason), ("plaintext", plaintext), ("ttl", ttl), ("urgency", urgency), ("topic", topic),
                ("vapid_key", vapidKey),
            ] {
                if let value { fields[name] = .string(value) }
            }
            return .object(fields)
        }
    }

    private let subscriptions = Mutex<[String: Subscription]>([:])
    private let deliveries = Mutex<[Delivery]>([])
    /// Deliveries answered 201 since the sandbox started (the record is trimmed; this is not).
    private let delivered = Atomic<Int>(0)
    /// At most this many subscriptions and deliveries are kept (a load run must not fill memory).
    static let limit = 100_000

    package init() {}

    /// `path` without its query; `authority` is the request's `:authority` (the origin's host and port).
    package func answer(
        method: String, path: String, query: [String: String], headers: [(name: String, value: String)], body: [UInt8],
        authority: String, now: Date = Date()
    ) -> (status: Int, json: JSONValue?, headers: [(String, String)]) {
        switch (method, path) {
        case ("POST", "/webpush/subscriptions"):
            return subscribe(query: query, authority: authority)
        case ("GET", "/webpush/deliveries"):
            return (200, .array(deliveries.withLock { $0 }.map(\.json)), [])
        case ("GET", "/webpush/stats"):
            let count = subscriptions.withLock { $0.count }
            return (200, ["delivered": .integer(Int64(delivered.load(ordering: .relaxed))), "subscriptions": .integer(Int64(count))], [])
        case ("DELETE", "/webpush/deliveries"):
            deliveries.withLock { $0.removeAll() }
            return (200, ["status": "reset"], [])
        case ("POST", _) where path.hasPrefix("/webpush/push/"):
            let id = String(path.dropFirst("/webpush/push/".count))
            return deliver(id: id, headers: headers, body: body, origin: "https://" + authority, now: now)
        default:
            return (404, ["error": "no such Web Push route"], [])
        }
    }

    private func subscribe(query: [String: String], authority: String) -> (status: Int, json: JSONValue?, headers: [(String, String)]) {
        let scripted = query["answer"].flatMap { Int($0) }
        if let scripted, ![403, 404, 410, 413, 429, 500, 502, 503].contains(scripted) {
            return (400, ["error": "answer must be one of 403, 404, 410, 413, 429, 500, 502, 503"], [])
        }
        let plain = query["plain"] == "1"
        let receiverKey = plain ? nil : P256.KeyAgreement.PrivateKey()
        var authSecret = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in authSecret.indices { authSecret[index] = generator.next() }
        let id = Hex.encode(SecureRandom.bytes(16))
        let subscription = Subscription(
            receiverKey: receiverKey, authSecret: authSecret, answer: scripted, times: query["times"].flatMap { Int($0) },
            retryAfter: query["retry_after"].flatMap { Int($0) }, stalls: query["stall"] == "1")
        let stored = subscriptions.withLock { all -> Bool in
            guard all.count < Self.limit else { return false }
            all[id] = subscription
            return true
        }
        guard stored else { return (503, ["error": .string("the sandbox holds \(Self.limit) subscriptions")], []) }
        var json: [String: JSONValue] = ["endpoint": .string("https://\(authority)/webpush/push/\(id)")]
        if let receiverKey {
            json["keys"] = [
                "p256dh": .string(Base64URL.encode(receiverKey.publicKey.x963Representation)),
                "auth": .string(Base64URL.encode(authSecret)),
            ]
        }
        return (201, .object(json), [])
    }

    private func deliver(
        id: String, headers: [(name: String, value: String)], body: [UInt8], origin: String, now: Date
    ) -> (status: Int, json: JSONValue?, headers: [(String, String)]) {
        func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
        var delivery = Delivery(
            sequence: 0, subscription: id, status: 201, ttl: header("ttl"), urgency: header("urgency"), topic: header("topic"),
            receivedAt: now)
        defer { record(delivery) }
        func refuse(_ status: Int, _ reason: String, _ extra: [(String, String)] = []) -> (Int, JSONValue?, [(String, String)]) {
            delivery.status = status
            delivery.reason = reason
            return (status, ["reason": .string(reason)], extra)
        }
        // The script plays before any check, as a service that is down or has dropped the
        // subscription would answer.
        let (found, scripted) = subscriptions.withLock { all -> (Subscription?, Subscription?) in
            guard var subscription = all[id] else { return (nil, nil) }
            guard let answer = subscription.answer, answer > 0, subscription.times.map({ subscription.answered < $0 }) ?? true else {
                return (subscription, nil)
            }
            subscription.answered += 1
            all[id] = subscription
            return (subscription, subscription)
        }
        guard let subscription = found else { return refuse(404, "no such subscription") }
        if subscription.stalls {
            delivery.status = SandboxFaces.noAnswer
            return (SandboxFaces.noAnswer, nil, [])
        }
        if let scripted, let status = scripted.answer {
            let extra = scripted.retryAfter.map { [("retry-after", String($0))] } ?? []
            return refuse(status, "scripted \(status)", extra)
        }
        guard let authorization = header("authorization") else { return refuse(401, "missing Authorization: vapid") }
        do {
            let identity = try VAPIDVerifier.verify(authorization: authorization, audience: origin, now: now)
            delivery.vapidKey = identity.publicKey
        } catch {
            return refuse(403, error.description)
        }
        guard let ttl = header("ttl"), Int(ttl).map({ $0 >= 0 }) == true else { return refuse(400, "TTL must be a non-negative integer") }
        guard body.count <= 4_096 else { return refuse(413, "the body is larger than 4096 bytes") }
        if let receiverKey = subscription.receiverKey {
            guard header("content-encoding") == "aes128gcm" else { return refuse(415, "Content-Encoding must be aes128gcm") }
            do {
                let plaintext = try WebPushDecryption.decrypt(body, receiverKey: receiverKey, authSecret: subscription.authSecret)
                delivery.plaintext = String(decoding: plaintext, as: UTF8.self)
            } catch {
                return refuse(400, "cannot decrypt: \(error.description)")
            }
        } else {
            delivery.plaintext = String(decoding: body, as: UTF8.self)
        }
        return (201, nil, [("location", "/webpush/messages/\(UUID().uuidString.lowercased())")])
    }

    private func record(_ delivery: Delivery) {
        if delivery.status == 201 { delivered.add(1, ordering: .relaxed) }
        deliveries.withLock { all in
            if all.count >= Self.limit { all.removeFirst(all.count / 2) }
            var numbered = delivery
            numbered.sequence = (all.last?.sequence ?? 0) + 1
            all.append(numbered)
        }
    }

    package var recorded: [Delivery] { deliveries.withLock { $0 } }
}
