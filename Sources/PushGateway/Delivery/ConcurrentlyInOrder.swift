/// Runs `body` on every item concurrently (a child task each) and returns the results in the
/// items' order: the default batch sends of `PushSender` and `APNsTransport`.
func concurrentlyInOrder<Item: Sendable, Output: Sendable>(
    _ items: [Item], _ body: @escaping @Sendable (Item) async -> Output
) async -> [Output] {
    await withTaskGroup(of: (Int, Output).self) { group in
        for (index, item) in items.enumerated() {
            group.addTask {
                // Awaited before the tuple is built: at -O, Swift 6.3 can lose the index written
                // before the suspension (swiftlang/swift#91911; see RelayPool.publish).
                let output = await body(item)
                return (index, output)
            }
        }
        var results = [Output?](repeating: nil, count: items.count)
        for await (index, output) in group { results[index] = output }
        return results.map { $0! }
    }
}
