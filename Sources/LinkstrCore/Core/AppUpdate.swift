/// One published change: the new `rev` and the full new value of the slice that changed (full
/// slices, not diffs, so a renderer never patches stale data).
public struct AppUpdate: Sendable, Equatable {
    public enum Slice: Sendable, Equatable {
        case identity(IdentityView?)
        case sessions(SessionListView)
        case feed(SessionFeedView?)
        case postDetail(PostDetailView?)
        case contacts([ContactView])
        case relays(RelaysView)
        case toast(String?)
    }

    public var rev: UInt64
    public var slice: Slice
}
