import ArgumentParser
import NostrProtocol

@main
struct LinkstrCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "linkstr",
        abstract: "A headless linkstr client.",
        subcommands: [KeysCommand.self, WrapCommand.self]
    )
}
