import ArgumentParser
import NostrProtocol

/// `linkstr-load pubkeys`: valid x-only public keys, hex, one a line, for benchmarks that register
/// devices in bulk by SQL and then send to them (`inbox`). A random x is a valid key about half
/// the time; no secret key is made, since nothing is sent as them.
struct PubkeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "pubkeys", abstract: "Print valid random public keys (hex), one a line.")

    @Option(help: "How many.") var count = 100_000

    func run() {
        var lines: [String] = []
        lines.reserveCapacity(count)
        while lines.count < count {
            let candidate = Hex.encode(SecureRandom.bytes(32))
            if (try? PublicKey(hex: candidate)) != nil { lines.append(candidate) }
        }
        print(lines.joined(separator: "\n"))
    }
}
