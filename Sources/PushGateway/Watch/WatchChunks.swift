/// The watched pubkeys split into subscription chunks of at most `size` pubkeys each.
///
/// Placement is stable: a pubkey stays in its chunk until it is removed, a new one fills the
/// lowest chunk with room. So a registration or removal changes exactly one chunk, and only that
/// chunk's REQ is re-issued (a chunk that becomes empty is closed).
public struct WatchChunks: Sendable, Equatable {
    public let size: Int
    public private(set) var chunks: [Set<String>] = []
    private var chunkOf: [String: Int] = [:]
    /// Indexes of chunks with room, ascending.
    private var open: [Int] = []

    public init(size: Int) {
        precondition(size > 0)
        self.size = size
    }

    public var count: Int { chunkOf.count }
    public func contains(_ pubkey: String) -> Bool { chunkOf[pubkey] != nil }
    public func chunk(of pubkey: String) -> Int? { chunkOf[pubkey] }

    /// Adds `pubkey`; returns the chunk that changed, or nil when it was there already.
    @discardableResult
    public mutating func insert(_ pubkey: String) -> Int? {
        guard chunkOf[pubkey] == nil else { return nil }
        let index: Int
        if let first = open.first {
            index = first
        } else {
            index = chunks.count
            chunks.append([])
            open.append(index)
        }
        chunks[index].insert(pubkey)
        chunkOf[pubkey] = index
        if chunks[index].count >= size { open.removeFirst() }
        return index
    }

    /// Removes `pubkey`; returns the chunk that changed, or nil when it was not watched.
    @discardableResult
    public mutating func remove(_ pubkey: String) -> Int? {
        guard let index = chunkOf.removeValue(forKey: pubkey) else { return nil }
        let wasFull = chunks[index].count >= size
        chunks[index].remove(pubkey)
        if wasFull {
            let position = open.firstIndex { $0 > index } ?? open.count
            open.insert(index, at: position)
        }
        return index
    }

    /// Applies a batch of changes; returns the chunks that changed.
    public mutating func apply(inserted: some Sequence<String>, removed: some Sequence<String>) -> Set<Int> {
        var changed = Set<Int>()
        for pubkey in removed { if let index = remove(pubkey) { changed.insert(index) } }
        for pubkey in inserted { if let index = insert(pubkey) { changed.insert(index) } }
        return changed
    }
}
