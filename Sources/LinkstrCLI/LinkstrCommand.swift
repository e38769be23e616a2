import ArgumentParser
import NostrProtocol

@main
struct LinkstrCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "linkstr",
        abstract: "A headless linkstr client.",
        subcommands: [KeysCommand.self]
    )
}
