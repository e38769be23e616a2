import ArgumentParser
import NostrProtocol

@main
struct LinkstrCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "linkstr",
        abstract: "A headless linkstr client.",
        subcommands: [
            IdentityCommand.self, RelaysCommand.self, ContactsCommand.self, SessionsCommand.self, PostCommand.self, ReactCommand.self,
            DeleteCommand.self, SyncCommand.self, FeedCommand.self, PushCommand.self, KeysCommand.self, WrapCommand.self,
        ]
    )
}
