import NostrProtocol
import PushGateway
import Testing

/// When the watcher sends a chunk's REQ again after a relay closed it, as a value.
struct ClosedChunkBackoffTests {
    /// A relay that will not serve the gateway is asked again after a minute, then less and less
    /// often, up to once an hour.
    @Test func aRefusingRelayIsAskedAgainRarely() {
        for reason in [MachineReadablePrefix.authRequired, .restricted, .blocked] {
            let delays = (1...9).map { WatchGroup.ClosedChunk.retryDelay(afterClosures: $0, reason: reason) }
            #expect(
                delays == [60, 120, 240, 480, 960, 1_920, 3_600, 3_600, 3_600].map { Duration.seconds($0) },
                "\(reason): \(delays)")
        }
    }

    /// Any other CLOSED is passing: again within seconds, backing off to five minutes.
    @Test func aPassingCloseIsRetriedSoon() {
        for reason in [MachineReadablePrefix.rateLimited, .error, nil] {
            let delays = (1...9).map { WatchGroup.ClosedChunk.retryDelay(afterClosures: $0, reason: reason) }
            #expect(delays == [5, 10, 20, 40, 80, 160, 300, 300, 300].map { Duration.seconds($0) }, "\(String(describing: reason))")
        }
        #expect(WatchGroup.ClosedChunk.retryDelay(afterClosures: 0, reason: nil) == .seconds(5), "a count below one is the first")
    }
}
