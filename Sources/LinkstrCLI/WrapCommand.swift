import ArgumentParser
import Foundation
import Logging
import NostrProtocol
import NostrRelay

/// `linkstr wrap send`: publishes one NIP-59 gift wrap (a kind-14 rumor sealed and wrapped to the
/// recipient) to a relay and reports the relay's answer. Handy to see the gateway's relay watcher
/// push a device, and the first piece of the headless client.
struct WrapCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wrap",
        abstract: "Send NIP-59 gift wraps.",
        subcommands: [Send.self]
    )

    struct Send: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Wrap a short message to a recipient and publish it to a relay.")
        @Option(help: "Recipient public key (hex or npub1…).") var to: String
        @Option(help: "Relay URL (ws:// or wss://).") var relay: String
        @Option(help: "Sender secret key (hex or nsec1…); default: the LINKSTR_NSEC environment variable, else a fresh key.")
        var nsec: String?
        @Option(help: "The rumor's content.") var text = "hello from linkstr"
        @Option(help: "Seconds to wait for the relay's OK.") var timeout = 10

        func run() async throws {
            let recipient: PublicKey
            do { recipient = try PublicKey(parsing: to) } catch { throw ValidationError("--to is not a public key: \(error)") }
            guard relay.hasPrefix("ws://") || relay.hasPrefix("wss://") else {
                throw ValidationError("--relay must be a ws:// or wss:// URL")
            }
            let secretText = nsec ?? ProcessInfo.processInfo.environment["LINKSTR_NSEC"]
            let sender: Keys
            if let secretText {
                do { sender = Keys(secretKey: try SecretKey(parsing: secretText)) } catch {
                    throw ValidationError("not a secret key: \(error)")
                }
            } else {
                sender = Keys.generate()
            }
            let rumor = UnsignedEvent(pubkey: sender.publicKey, kind: 14, tags: [["p", recipient.hex]], content: text)
            let wrap = try GiftWrap.make(rumor, author: sender, recipient: recipient)

            var logger = Logger(label: "linkstr")
            logger.logLevel = .error
            var configuration = RelayConfiguration()
            configuration.publishTimeout = .seconds(timeout)
            let connection = RelayConnection(url: relay, configuration: configuration, logger: logger)
            let result = try await withThrowingTaskGroup(of: PublishResult?.self) { group in
                group.addTask {
                    try await connection.run()
                    return nil
                }
                defer { group.cancelAll() }
                return try await connection.publish(wrap)
            }
            print("wrap id: \(wrap.id.hex)")
            print("relay:   \(result.accepted ? "accepted" : "refused")\(result.message.isEmpty ? "" : " (\(result.message))")")
            if !result.accepted { throw ExitCode.failure }
        }
    }
}
