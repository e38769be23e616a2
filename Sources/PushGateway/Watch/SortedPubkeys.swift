/// Pubkeys of a chunk, sorted, looked up by binary search: the consumers of a chunk's
/// subscriptions share the array its REQ is made from, where a set per consumer held another
/// hash table per chunk (some 3 MB at 100,000 watched pubkeys).
package struct SortedPubkeys: Sendable, Sequence {
    let sorted: [String]

    /// `pubkeys` must be sorted ascending.
    package init(sorted pubkeys: [String]) {
        self.sorted = pubkeys
    }

    package func contains(_ pubkey: String) -> Bool {
        sorted.containsSorted(pubkey)
    }

    package func makeIterator() -> IndexingIterator<[String]> {
        sorted.makeIterator()
    }
}

extension RandomAccessCollection where Element: Comparable {
    /// Whether the collection, sorted ascending, holds `element` (a binary search).
    package func containsSorted(_ element: Element) -> Bool {
        var low = startIndex
        var high = endIndex
        while low < high {
            let middle = index(low, offsetBy: distance(from: low, to: high) / 2)
            if self[middle] < element { low = index(after: middle) } else { high = middle }
        }
        return low < endIndex && self[low] == element
    }
}
