import ArgumentParser
import NostrProtocol

struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Generate or inspect Nostr keys.",
        subcommands: [Generate.self, Show.self]
    )

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Generate a new key pair and print it.")
        func run() {
            let keys = Keys.generate()
            print("npub: \(keys.publicKey.npub)")
            print("hex:  \(keys.publicKey.hex)")
            print("nsec: \(keys.secretKey.exportNsec())")
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the public key of a secret key (hex or nsec) or decode an npub.")
        @Argument(help: "A secret key (hex or nsec1…) or a public key (hex or npub1…).") var key: String
        func run() throws {
            if let secret = try? SecretKey(parsing: key), !key.hasPrefix("npub") {
                let keys = Keys(secretKey: secret)
                print("npub: \(keys.publicKey.npub)")
                print("hex:  \(keys.publicKey.hex)")
            } else {
                do {
                    let pub = try PublicKey(parsing: key)
                    print("npub: \(pub.npub)")
                    print("hex:  \(pub.hex)")
                } catch {
                    throw ValidationError("not a key: \(error)")
                }
            }
        }
    }
}
