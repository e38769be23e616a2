/// Pushes by outcome over the last few minutes, in fixed time buckets, for the console's
/// sparklines. Its size is fixed whatever the traffic: `bucketCount` buckets, each a count per
/// outcome (a handful of names). A bucket is reused when its slot comes round again.
public struct PushRateWindow: Sendable, Equatable {
    /// The console's window: 90 buckets of 10 s, the last 15 minutes.
    public static let console = PushRateWindow(bucketSeconds: 10, bucketCount: 90)

    public let bucketSeconds: Int
    public let bucketCount: Int
    /// Which bucket (seconds since 1970 divided by `bucketSeconds`) each slot holds now.
    private var numbers: [Int]
    private var counts: [[String: Int]]

    public init(bucketSeconds: Int, bucketCount: Int) {
        precondition(bucketSeconds > 0 && bucketCount > 0, "a window needs at least one bucket of at least a second")
        self.bucketSeconds = bucketSeconds
        self.bucketCount = bucketCount
        self.numbers = Array(repeating: Int.min, count: bucketCount)
        self.counts = Array(repeating: [:], count: bucketCount)
    }

    /// Adds `count` pushes with `outcome` at `time` (seconds since 1970).
    public mutating func record(_ outcome: String, count: Int = 1, at time: Double) {
        let number = bucketNumber(time)
        let slot = self.slot(number)
        if numbers[slot] != number {
            numbers[slot] = number
            counts[slot] = [:]
        }
        counts[slot][outcome, default: 0] += count
    }

    /// Per outcome, the count in each bucket of the window that ends with the bucket holding
    /// `time`, oldest first (`bucketCount` figures). Outcomes with no push in the window are left out.
    public func series(endingAt time: Double) -> [String: [Int]] {
        let first = bucketNumber(time) - bucketCount + 1
        var result: [String: [Int]] = [:]
        for offset in 0..<bucketCount {
            let number = first + offset
            let slot = self.slot(number)
            guard numbers[slot] == number else { continue }
            for (outcome, count) in counts[slot] {
                result[outcome, default: Array(repeating: 0, count: bucketCount)][offset] += count
            }
        }
        return result
    }

    /// Times come from this process's clock; anything not finite or absurd counts as 0 rather
    /// than trapping in the conversion.
    private func bucketNumber(_ time: Double) -> Int {
        let number = (time / Double(bucketSeconds)).rounded(.down)
        return number.isFinite && abs(number) < 1e15 ? Int(number) : 0
    }

    private func slot(_ number: Int) -> Int {
        let remainder = number % bucketCount
        return remainder < 0 ? remainder + bucketCount : remainder
    }
}
