/// The APNs environment a device token belongs to.
public enum APNsEnvironment: String, Sendable, Hashable, CaseIterable {
    case sandbox
    case production
}
