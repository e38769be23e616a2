import Crypto
import Foundation
import GatewayWire
import PushGateway
import Synchronization
import Testing
import WebPush

/// `PushRouter` as a value over recording transports: each job reaches its platform's transport,
/// one batch per platform, and the results come back in the jobs' order.
struct PushRouterTests {
    /// Answers each job with a status of its own and records the batches it was given.
    final class RecordingTransport: PushSender {
        let status: Int
        let batches = Mutex<[[Int64]]>([])

        init(status: Int) { self.status = status }

        func send(_ job: ClaimedJob) async -> PushSendResult { await send([job])[0] }

        func send(_ jobs: [ClaimedJob]) async -> [PushSendResult] {
            batches.withLock { $0.append(jobs.map(\.id)) }
            return jobs.map { PushSendResult(status: status, reason: "job \($0.id)", outcome: .delivered) }
        }
    }

    static func job(_ id: Int64, _ destination: PushDestination) -> ClaimedJob {
        ClaimedJob(
            id: id, apnsID: UUID(), destination: destination, pubkey: "p", topic: "app", deviceUpdatedAt: Date(),
            notification: APNsNotification(type: .newPost, eventID: "e", conversationID: "c"), attempts: 1,
            expiresAt: Date().addingTimeInterval(60))
    }

    @Test func eachJobGoesToItsPlatformsTransportInOneBatchAndComesBackInOrder() async throws {
        let keys = try WebPushSubscriptionKeys(
            point: Array(P256.KeyAgreement.PrivateKey().publicKey.x963Representation), authSecret: [UInt8](repeating: 1, count: 16))
        let endpoint = try PushEndpoint("https://push.example/1")
        let apns = RecordingTransport(status: 200), webPush = RecordingTransport(status: 201)
        let router = PushRouter([.apns: apns, .webpush: webPush])
        #expect(router.platforms == [.apns, .webpush])
        let jobs = [
            Self.job(1, .apns(token: "aa", environment: .sandbox, kind: .alert)),
            Self.job(2, .webPush(endpoint: endpoint, keys: keys)),
            Self.job(3, .fcm(token: "f")),
            Self.job(4, .apns(token: "bb", environment: .production, kind: .alert)),
            Self.job(5, .webPush(endpoint: endpoint, keys: keys)),
        ]
        let results = await router.send(jobs)
        #expect(results.map(\.status) == [200, 201, 0, 200, 201])
        #expect(results.map(\.reason) == ["job 1", "job 2", "PlatformNotEnabled", "job 4", "job 5"])
        #expect(results[2].outcome == .configurationError(reason: "PlatformNotEnabled: fcm"), "the device is kept")
        #expect(apns.batches.withLock { $0 } == [[1, 4]])
        #expect(webPush.batches.withLock { $0 } == [[2, 5]])
    }

    @Test func aRoundOfOnePlatformIsHandedOverWhole() async {
        let apns = RecordingTransport(status: 200)
        let router = PushRouter([.apns: apns])
        let jobs = (1...3).map { Self.job(Int64($0), .apns(token: "t\($0)", environment: .sandbox, kind: .alert)) }
        #expect(await router.send(jobs).map(\.reason) == ["job 1", "job 2", "job 3"])
        #expect(apns.batches.withLock { $0 } == [[1, 2, 3]])
        #expect(await PushRouter([:]).send(jobs).map(\.reason) == ["PlatformNotEnabled", "PlatformNotEnabled", "PlatformNotEnabled"])
    }
}
