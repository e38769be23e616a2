public import GatewayWire

/// Sends each job through its device's platform's transport: one delivery round becomes one
/// round per platform, run at once, and the results come back in the jobs' order. A job for a
/// platform this gateway has no transport for (one an operator turned off after devices
/// registered on it) is a configuration error: the job is dropped and the device kept.
///
/// Each job first gets its app's own alert text, when `alerts` has one, so every platform shows
/// the same words.
public struct PushRouter: PushSender {
    let transports: [PushPlatform: any PushSender]
    let alerts: AlertTextCatalog

    public init(_ transports: [PushPlatform: any PushSender], alerts: AlertTextCatalog = AlertTextCatalog()) {
        self.transports = transports
        self.alerts = alerts
    }

    /// The platforms devices may register for: those with a transport.
    public var platforms: Set<PushPlatform> { Set(transports.keys) }

    public func send(_ job: ClaimedJob) async -> PushSendResult {
        await send([job])[0]
    }

    public func send(_ jobs: [ClaimedJob]) async -> [PushSendResult] {
        let jobs = alerts.isEmpty ? jobs : jobs.map(alerts.applied)
        var byPlatform: [PushPlatform: [Int]] = [:]
        for (index, job) in jobs.enumerated() { byPlatform[job.destination.platform, default: []].append(index) }
        // The common round is all one platform: no regrouping, no task.
        if byPlatform.count == 1, let (platform, _) = byPlatform.first {
            guard let transport = transports[platform] else { return jobs.map { _ in Self.notEnabled(platform) } }
            return await transport.send(jobs)
        }
        var results = [PushSendResult?](repeating: nil, count: jobs.count)
        await withTaskGroup(of: [(Int, PushSendResult)].self) { group in
            for (platform, indices) in byPlatform {
                guard let transport = transports[platform] else {
                    for index in indices { results[index] = Self.notEnabled(platform) }
                    continue
                }
                let batch = indices.map { jobs[$0] }
                group.addTask { Array(zip(indices, await transport.send(batch))) }
            }
            for await answered in group {
                for (index, result) in answered { results[index] = result }
            }
        }
        return results.map { $0 ?? PushSendResult(status: 0, reason: "NoAnswer", outcome: .retry(reason: "NoAnswer")) }
    }

    static func notEnabled(_ platform: PushPlatform) -> PushSendResult {
        let reason = "PlatformNotEnabled"
        return PushSendResult(status: 0, reason: reason, outcome: .configurationError(reason: "\(reason): \(platform.rawValue)"))
    }
}
