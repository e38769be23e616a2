public import GatewayWire

/// Each app's own alert text, by topic and notification type (the `alerts` of `APPS_FILE` or
/// `APNS_APPS_FILE` entries). A type an app does not name keeps the gateway's generic text.
/// Every platform shows the same text: it is set on the job before its transport builds the
/// message.
public struct AlertTextCatalog: Sendable, Equatable {
    public var byTopic: [String: [NotificationType: AlertText]]

    public init(_ byTopic: [String: [NotificationType: AlertText]] = [:]) {
        self.byTopic = byTopic
    }

    public var isEmpty: Bool { byTopic.isEmpty }

    public func text(topic: String, type: NotificationType) -> AlertText? {
        byTopic[topic]?[type]
    }

    /// `job` with its app's text, when the app has one for its type.
    func applied(to job: ClaimedJob) -> ClaimedJob {
        guard let text = text(topic: job.topic, type: job.notification.type) else { return job }
        var job = job
        job.notification.alertText = text
        return job
    }
}
