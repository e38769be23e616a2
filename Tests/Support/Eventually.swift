/// Polls `condition` every 50 ms for up to `seconds`; returns whether it came true.
public func eventually(within seconds: Double = 30, _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return await condition()
}
