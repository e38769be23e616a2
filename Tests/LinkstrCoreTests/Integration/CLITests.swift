import Foundation
import NostrProtocol
import TestSupport
import Testing

/// The `linkstr` executable as a user runs it: separate processes, data directories, a real relay.
@Suite(.serialized) struct CLITests {
    struct User {
        let directory: String
        let binary: String

        /// The subcommand path first, then options (ArgumentParser wants `--data-dir` after it).
        func cli(_ arguments: [String]) async throws -> (code: Int32, output: String) {
            let split = arguments.firstIndex { $0.hasPrefix("-") } ?? arguments.count
            return try await ChildProcess.run(
                binary, Array(arguments[..<split]) + ["--data-dir", directory] + Array(arguments[split...]),
                timeout: .seconds(60))
        }

        func ok(_ arguments: String...) async throws -> String {
            let (code, output) = try await cli(arguments)
            guard code == 0 else { throw FixtureError("linkstr \(arguments.joined(separator: " ")) exited \(code): \(output)") }
            return output
        }

        /// Points the account at `relay` alone. Ours first: an empty list would be refilled with the defaults.
        func useOnly(_ relay: RelayFixture) async throws {
            _ = try await ok("relays", "add", relay.url)
            for url in ["wss://relay.damus.io", "wss://nos.lol", "wss://relay.primal.net"] { _ = try await ok("relays", "remove", url) }
        }

        func json(_ arguments: String...) async throws -> JSONValue {
            let (code, output) = try await cli(arguments + ["--json"])
            guard code == 0 else { throw FixtureError("linkstr \(arguments.joined(separator: " ")) exited \(code): \(output)") }
            return try JSONValue(parsing: output.split(separator: "\n").last.map(String.init) ?? "")
        }
    }

    static func user(_ binary: String) -> User {
        User(
            directory: FileManager.default.temporaryDirectory.appendingPathComponent("linkstr-cli-\(UUID().uuidString)").path,
            binary: binary)
    }

    @Test func twoUsersShareALinkThroughTheCLI() async throws {
        let binary = try ChildProcess.builtProduct("linkstr")
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        let alice = Self.user(binary), bob = Self.user(binary)
        for user in [alice, bob] {
            _ = try await user.ok("identity", "create")
            try await user.useOnly(relay)
        }
        // Bob's first sync restores an (empty) history; what arrives later is new to him.
        #expect(try await bob.json("sync", "--timeout", "1")["sessions"] == 0)
        let bobKey = try #require(try await bob.json("identity", "show")["npub"]?.stringValue)
        let relays = try await alice.json("relays", "list", "--check", "3")
        #expect(relays["connected_or_readonly"] == 1 && relays["total"] == 1)

        let session = try #require(try await alice.json("sessions", "create", "--name", "Clips", "--member", bobKey)["id"]?.stringValue)
        let post = try #require(try await alice.json("post", session, "example.com/v", "--note", "look")["id"]?.stringValue)

        // Bob syncs and sees the post unread; reading the feed marks it read.
        let synced = try await bob.json("sync", "--timeout", "2")
        #expect(synced["sessions"] == 1 && synced["unread"] == 1)
        let feed = try await bob.json("feed", session)
        #expect(feed["name"] == "Clips")
        let posts = try #require(feed["posts"]?.arrayValue)
        #expect(
            posts.count == 1 && posts.first?["url"] == "https://example.com/v" && posts.first?["unread"] == true
                && posts.first?["note"] == "look")
        #expect(try await bob.json("feed", session)["posts"]?.arrayValue?.first?["unread"] == false)
        _ = try await bob.ok("react", post, "👍")

        // Alice sees the reaction.
        _ = try await alice.json("sync", "--timeout", "2")
        let reactions = try await alice.json("feed", session)["posts"]?.arrayValue?.first?["reactions"]?.arrayValue
        #expect(reactions?.first?["emoji"] == "👍" && reactions?.first?["count"] == 1)
        let members = try #require(try await alice.json("sessions", "members", session)["members"]?.arrayValue)
        #expect(members.count == 2)

        // Bad input: a clear error and a failing exit code, nothing changed.
        let refused = try await alice.cli(["post", session, "ftp://example.com"])
        #expect(refused.code != 0 && refused.output.contains("http or https"))
        let sessions = try #require(try await alice.json("sessions", "list")["sessions"]?.arrayValue)
        #expect(sessions.count == 1)
    }

    /// The NIP-17 inbox list through the CLI: added and removed lists are published as kind 10050
    /// and read back on another device of the same account; bad input fails and publishes nothing.
    @Test func inboxRelaysArePublishedAndFollowTheAccount() async throws {
        let binary = try ChildProcess.builtProduct("linkstr")
        let relay = try RelayFixture()
        try await relay.start()
        defer { relay.kill() }
        let phone = Self.user(binary), laptop = Self.user(binary)
        let keys = Keys.generate()
        for user in [phone, laptop] {
            _ = try await user.ok("identity", "import", keys.secretKey.exportNsec())
            try await user.useOnly(relay)
        }
        _ = try await phone.ok("relays", "inbox", "add", "WSS://Inbox.Example:443/")
        _ = try await phone.ok("relays", "inbox", "add", "wss://dm.example/inbox")
        #expect(try await phone.json("relays", "inbox", "list")["inbox_relays"] == ["wss://inbox.example", "wss://dm.example/inbox"])

        // Bad input: a clear error, a failing exit code, and no new list on the relay.
        let duplicate = try await phone.cli(["relays", "inbox", "add", "wss://inbox.example"])
        #expect(duplicate.code != 0 && duplicate.output.contains("already an inbox relay"), "\(duplicate.output)")
        let notWebSocket = try await phone.cli(["relays", "inbox", "add", "https://inbox.example"])
        #expect(notWebSocket.code != 0 && notWebSocket.output.contains("must start with ws:// or wss://"), "\(notWebSocket.output)")
        let unknown = try await phone.cli(["relays", "inbox", "remove", "wss://never.example"])
        #expect(unknown.code != 0 && unknown.output.contains("not an inbox relay"), "\(unknown.output)")

        // The relay holds the list as NIP-17 describes it; the laptop picks it up on sync.
        let stored = try await CoreEndToEndTests.stored(on: relay, Filter(authors: [keys.publicKey], kinds: [10050]))
        #expect(stored.count == 1 && stored.first?.tags == [["relay", "wss://inbox.example"], ["relay", "wss://dm.example/inbox"]])
        _ = try await laptop.json("sync", "--timeout", "2")
        #expect(try await laptop.json("relays", "inbox", "list")["inbox_relays"] == ["wss://inbox.example", "wss://dm.example/inbox"])

        // A removal on the laptop reaches the phone.
        _ = try await laptop.ok("relays", "inbox", "remove", "wss://inbox.example/")
        _ = try await phone.json("sync", "--timeout", "2")
        #expect(try await phone.json("relays", "inbox", "list")["inbox_relays"] == ["wss://dm.example/inbox"])
    }
}
