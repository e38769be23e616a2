/// Runs `body` on every item concurrently (a child task each) and returns the results in the
/// items' order: the default batch sends of `APNsSender` and `APNsTransport`.
func concurrentlyInOrder<Item: Sendable, Output: Sendable>(
    _ items: [Item], _ body: @escaping @Sendable (Item) async -> Output
) async -> [Output] {
    await withTaskGroup(of: (Int, Output).self) { group in
        for (index, item) in items.enumerated() {
            group.addTask { (index, await body(item)) }
        }
        var results = [Output?](repeating: nil, count: items.count)
        for await (index, output) in group { results[index] = output }
        return results.map { $0! }
    }
}
