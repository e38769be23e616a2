/// The APNs headers of one push, read in one pass over its header list: the first value of each,
/// and whether any of them came more than once (Apple answers `DuplicateHeaders`). The checks,
/// the provider-token check and the delivery record all read these; looked up one name at a time
/// (and once more against a set for duplicates) they were about fifteen scans of the list a push.
struct APNsHeaderValues {
    var authorization: String?
    var topic: String?
    var pushType: String?
    var priority: String?
    var id: String?
    var expiration: String?
    var collapseID: String?
    /// One of the headers above came twice.
    var hasDuplicate = false

    /// `headers` with lower-case names, as `SandboxRequest` holds them.
    init(_ headers: [(name: String, value: String)]) {
        for (name, value) in headers {
            switch name {
            case "authorization": Self.take(value, into: &authorization, duplicate: &hasDuplicate)
            case "apns-topic": Self.take(value, into: &topic, duplicate: &hasDuplicate)
            case "apns-push-type": Self.take(value, into: &pushType, duplicate: &hasDuplicate)
            case "apns-priority": Self.take(value, into: &priority, duplicate: &hasDuplicate)
            case "apns-id": Self.take(value, into: &id, duplicate: &hasDuplicate)
            case "apns-expiration": Self.take(value, into: &expiration, duplicate: &hasDuplicate)
            case "apns-collapse-id": Self.take(value, into: &collapseID, duplicate: &hasDuplicate)
            default: continue
            }
        }
    }

    private static func take(_ value: String, into field: inout String?, duplicate: inout Bool) {
        if field == nil { field = value } else { duplicate = true }
    }
}
