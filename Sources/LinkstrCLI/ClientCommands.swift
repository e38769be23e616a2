import ArgumentParser
import Foundation
import LinkstrCore
import NostrProtocol

// The headless client's commands, each a thin layer over `LinkstrAppCore` actions and state.

struct IdentityCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "identity", abstract: "Create, import or show the account.",
        subcommands: [Create.self, Import.self, Show.self, Logout.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create a new keypair and sign in with it.")
        @OptionGroup var options: ClientOptions
        func run() async throws {
            let core = try await options.core()
            try await core.perform(.createIdentity).orThrow()
            try await Show.show(core, options)
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign in with an nsec or hex secret key (argument, or $LINKSTR_NSEC to keep it out of shell history).")
        @OptionGroup var options: ClientOptions
        @Argument(help: "nsec1… or 64 hex characters.") var secret: String?
        func run() async throws {
            guard let text = secret ?? ProcessInfo.processInfo.environment["LINKSTR_NSEC"] else {
                throw ValidationError("give the key or set LINKSTR_NSEC")
            }
            let core = try await options.core()
            try await core.perform(.importIdentity(text)).orThrow()
            try await Show.show(core, options)
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the signed-in account's npub and hex key.")
        @OptionGroup var options: ClientOptions
        func run() async throws { try await Self.show(try await options.core(), options) }

        static func show(_ core: LinkstrAppCore, _ options: ClientOptions) async throws {
            guard let identity = await core.state().identity else {
                throw CLIError("no account; run `linkstr identity create` or `identity import`")
            }
            if options.json {
                options.print(.object(["npub": .string(identity.npub), "pubkey": .string(identity.pubkey)]))
            } else {
                print("npub    \(identity.npub)\npubkey  \(identity.pubkey)")
            }
        }
    }

    struct Logout: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign out (unregistering the push device); --clear also erases this account's data and keys.")
        @OptionGroup var options: ClientOptions
        @Flag(help: "Erase the account's local data and key material.") var clear = false
        func run() async throws { try await options.core().perform(.logout(clearData: clear)).orThrow() }
    }
}

struct RelaysCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "relays", abstract: "The relay list.",
        subcommands: [Add.self, List.self, Remove.self, Enable.self, Disable.self, Reset.self, Inbox.self])

    struct Add: AsyncParsableCommand {
        @OptionGroup var options: ClientOptions
        @Argument(help: "ws:// or wss:// URL.") var url: String
        func run() async throws { try await options.core().perform(.addRelay(url)).orThrow() }
    }

    /// The NIP-17 inbox list (kind 10050): where senders publish this account's gift wraps.
    struct Inbox: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The NIP-17 inbox relays (kind 10050) senders publish to.", subcommands: [List.self, Add.self, Remove.self])

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "The inbox relays, as last synced (run `sync` to refresh).")
            @OptionGroup var options: ClientOptions
            func run() async throws {
                let inbox = try await options.core().state().relays.inbox
                if options.json {
                    options.print(.object(["inbox_relays": .array(inbox.map { .string($0) })]))
                } else {
                    for url in inbox { print(url) }
                }
            }
        }

        struct Add: AsyncParsableCommand {
            @OptionGroup var options: ClientOptions
            @Argument(help: "ws:// or wss:// URL.") var url: String
            func run() async throws {
                let core = try await options.core(relays: true, settle: 5)
                try await core.perform(.addInboxRelay(url)).orThrow()
                await core.shutdown()
            }
        }

        struct Remove: AsyncParsableCommand {
            @OptionGroup var options: ClientOptions
            @Argument var url: String
            func run() async throws {
                let core = try await options.core(relays: true, settle: 5)
                try await core.perform(.removeInboxRelay(url)).orThrow()
                await core.shutdown()
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        @OptionGroup var options: ClientOptions
        @Argument var url: String
        func run() async throws { try await options.core().perform(.removeRelay(url)).orThrow() }
    }

    struct Enable: AsyncParsableCommand {
        @OptionGroup var options: ClientOptions
        @Argument var url: String
        func run() async throws { try await options.core().perform(.setRelayEnabled(url, true)).orThrow() }
    }

    struct Disable: AsyncParsableCommand {
        @OptionGroup var options: ClientOptions
        @Argument var url: String
        func run() async throws { try await options.core().perform(.setRelayEnabled(url, false)).orThrow() }
    }

    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Back to the default relays.")
        @OptionGroup var options: ClientOptions
        func run() async throws { try await options.core().perform(.resetRelays).orThrow() }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The relays; --check connects first and shows live status.")
        @OptionGroup var options: ClientOptions
        @Option(help: "Seconds to wait for connections before printing status (0: do not connect).") var check: Double = 0
        func run() async throws {
            let core = try await options.core(relays: check > 0, settle: check)
            let relays = await core.state().relays
            if options.json {
                options.print(
                    .object([
                        "relays": .array(relays.rows.map(CLIJSON.relay)),
                        "connected_or_readonly": .integer(Int64(relays.connectedOrReadOnly)),
                        "total": .integer(Int64(relays.total)),
                    ]))
            } else {
                print("relays \(relays.summary)")
                for row in relays.rows {
                    print("\(row.enabled ? " " : "-") \(row.url)  \(row.status.label)\(row.status.errorText.map { "  (\($0))" } ?? "")")
                }
            }
            await core.shutdown()
        }
    }
}

struct ContactsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "contacts", abstract: "The follow list (kind 3) and private aliases.",
        subcommands: [Add.self, List.self, Remove.self])

    struct Add: AsyncParsableCommand {
        @OptionGroup var options: ClientOptions
        @Argument(help: "npub or hex key.") var key: String
        @Option(help: "A private alias (never published).") var alias: String?
        func run() async throws {
            let core = try await options.core(relays: true, settle: 5)
            try await core.perform(.addContact(key, alias: alias)).orThrow()
            await core.shutdown()
        }
    }

    struct Remove: AsyncParsableCommand {
        @OptionGroup var options: ClientOptions
        @Argument var key: String
        func run() async throws {
            let core = try await options.core(relays: true, settle: 5)
            try await core.perform(.removeContact(key)).orThrow()
            await core.shutdown()
        }
    }

    struct List: AsyncParsableCommand {
        @OptionGroup var options: ClientOptions
        func run() async throws {
            let contacts = try await options.core().state().contacts
            if options.json {
                options.print(.object(["contacts": .array(contacts.map(CLIJSON.contact))]))
            } else {
                for contact in contacts { print("\(contact.npub)  \(contact.displayName)") }
            }
        }
    }
}

struct SessionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sessions", abstract: "Sessions: create, list, members, archive, delete.",
        subcommands: [Create.self, List.self, Members.self, Archive.self, Unarchive.self, Delete.self])

    struct Create: AsyncParsableCommand {
        @OptionGroup var options: ClientOptions
        @Option(help: "The session's name.") var name: String
        @Option(name: .customLong("member"), help: "A member (npub or hex); repeat for more.") var members: [String] = []
        func run() async throws {
            let core = try await options.core(relays: true, settle: 5)
            guard case .navigate(let id) = try await core.perform(.createSession(name: name, members: members)).orThrow() else { return }
            if options.json { options.print(.object(["id": .string(id)])) } else { print(id) }
            await core.shutdown()
        }
    }

    struct List: AsyncParsableCommand {
        @OptionGroup var options: ClientOptions
        @Flag(help: "List archived sessions instead.") var archived = false
        func run() async throws {
            let core = try await options.core()
            try await core.perform(.setListMode(archived ? .archived : .active)).orThrow()
            let rows = await core.state().sessions.rows
            if options.json {
                options.print(.object(["sessions": .array(rows.map(CLIJSON.session))]))
            } else {
                for row in rows {
                    print(
                        "\(row.id)  \(row.name)  \(row.unreadCount > 0 ? "\(row.unreadCount) unread" : "")\(row.isActiveMember ? "" : "  (removed)")"
                    )
                }
            }
        }
    }

    struct Members: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show members; with --set, replace them (creator only).")
        @OptionGroup var options: ClientOptions
        @Argument var session: String
        @Option(name: .customLong("set"), help: "The new member list (npub or hex); repeat. You stay a member.") var newMembers: [String] =
            []
        @Flag(help: "Remove everyone but you.") var clear = false
        func run() async throws {
            let changing = clear || !newMembers.isEmpty
            let core = try await options.core(relays: changing, settle: changing ? 5 : 0)
            if changing { try await core.perform(.setSessionMembers(sessionID: session, members: newMembers)).orThrow() }
            try await core.perform(.openSession(session)).orThrow()
            let members = await core.state().feed?.members ?? []
            if options.json {
                options.print(.object(["members": .array(members.map(CLIJSON.member))]))
            } else {
                for member in members {
                    print("\(member.isActive ? "+" : "-") \(member.displayName)\(member.isCreator ? "  (creator)" : "")")
                }
            }
            await core.shutdown()
        }
    }

    struct Archive: AsyncParsableCommand {
        @OptionGroup var options: ClientOptions
        @Argument var session: String
        func run() async throws { try await options.core().perform(.setArchived(sessionID: session, true)).orThrow() }
    }

    struct Unarchive: AsyncParsableCommand {
        @OptionGroup var options: ClientOptions
        @Argument var session: String
        func run() async throws { try await options.core().perform(.setArchived(sessionID: session, false)).orThrow() }
    }

    struct Delete: AsyncParsableCommand {
        @OptionGroup var options: ClientOptions
        @Argument var session: String
        func run() async throws {
            let core = try await options.core(relays: true, settle: 5)
            try await core.perform(.deleteSession(sessionID: session)).orThrow()
            await core.shutdown()
        }
    }
}

struct PostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "post", abstract: "Share a link in a session.")
    @OptionGroup var options: ClientOptions
    @Argument var session: String
    @Argument(help: "The link (https:// is added when there is no scheme).") var url: String
    @Option(help: "An optional note.") var note: String?
    func run() async throws {
        let core = try await options.core(relays: true, settle: 5)
        guard case .posted(let id) = try await core.perform(.post(sessionID: session, url: url, note: note)).orThrow() else { return }
        if options.json { options.print(.object(["id": .string(id)])) } else { print(id) }
        await core.shutdown()
    }
}

struct ReactCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "react", abstract: "Toggle an emoji reaction on a post.")
    @OptionGroup var options: ClientOptions
    @Argument var post: String
    @Argument var emoji: String
    func run() async throws {
        let core = try await options.core(relays: true, settle: 5)
        try await core.perform(.toggleReaction(postID: post, emoji: emoji)).orThrow()
        await core.shutdown()
    }
}

struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete your own post.")
    @OptionGroup var options: ClientOptions
    @Argument var post: String
    func run() async throws {
        let core = try await options.core(relays: true, settle: 5)
        try await core.perform(.deletePost(postID: post)).orThrow()
        await core.shutdown()
    }
}

struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync", abstract: "Connect, take in history, stay live for --timeout seconds.")
    @OptionGroup var options: ClientOptions
    @Option(help: "Seconds to stay connected.") var timeout: Double = 10
    func run() async throws {
        // Connected for the whole --timeout: history first (backfill included), then live events.
        let started = ContinuousClock.now
        let core = try await options.core(relays: true, settle: timeout)
        let end = started + .milliseconds(Int(timeout * 1000))
        if ContinuousClock.now < end { try await Task.sleep(until: end) }
        await core.settle()
        let state = await core.state()
        let unread = state.sessions.rows.reduce(0) { $0 + $1.unreadCount }
        if options.json {
            options.print(
                .object([
                    "sessions": .integer(Int64(state.sessions.rows.count)), "unread": .integer(Int64(unread)),
                    "relays": .string(state.relays.summary),
                ]))
        } else {
            print("synced: \(state.sessions.rows.count) sessions, \(unread) unread; relays \(state.relays.summary)")
        }
        await core.shutdown()
    }
}

struct FeedCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feed", abstract: "A session's posts with reactions and unread marks (marks them read unless --peek).")
    @OptionGroup var options: ClientOptions
    @Argument var session: String
    @Flag(help: "Do not mark the posts read.") var peek = false
    func run() async throws {
        let core = try await options.core()
        // Read the marks before opening (opening marks them read).
        try await core.perform(.openSession(nil)).orThrow()
        let before = await core.stateFeedSnapshot(session)
        if !peek { try await core.perform(.openSession(session)).orThrow() }
        guard let feed = before else { throw CLIError("no such session") }
        if options.json {
            options.print(
                .object([
                    "session": .string(feed.sessionID), "name": .string(feed.name), "can_post": .bool(feed.canPost),
                    "posts": .array(feed.posts.map(CLIJSON.post)),
                ]))
        } else {
            print("# \(feed.name)\(feed.canPost ? "" : "  (read-only)")")
            for post in feed.posts {
                let reactions = post.reactions.map { "\($0.emoji)\($0.count)" }.joined(separator: " ")
                print(
                    "\(post.isRead ? " " : "*") \(post.authorName.prefix(16))  \(post.url)\(post.note.map { "  — \($0)" } ?? "")  \(reactions)  [\(post.id.prefix(12))]"
                )
            }
        }
    }
}

struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push", abstract: "Register this account's device with the push gateway (--push-url).",
        subcommands: [Register.self, Unregister.self, Sync.self])

    struct Register: AsyncParsableCommand {
        @OptionGroup var options: ClientOptions
        @Option(help: "The APNs device token (hex).") var token: String
        @Option(help: "sandbox or production.") var environment = "sandbox"
        @Flag(help: "Ask the gateway to watch relays for this account's gift wraps.") var relayWatch = false
        @Flag(help: "Add the gateway's own inbox relay to this account's NIP-17 relay list (kind 10050).") var inbox = false
        func run() async throws {
            guard let environment = PushRegistrar.Environment(rawValue: environment.lowercased()) else {
                throw ValidationError("--environment is sandbox or production")
            }
            // With --inbox the account's relay list is read and published again: that needs its relays.
            let core = try await options.core(relays: inbox, settle: inbox ? 5 : 0)
            try await core.perform(
                .registerPush(deviceToken: token, environment: environment, relayWatch: relayWatch, inbox: inbox)
            ).orThrow()
            await core.shutdown()
        }
    }

    struct Unregister: AsyncParsableCommand {
        @OptionGroup var options: ClientOptions
        func run() async throws {
            // The last device takes the gateway's inbox relay out of the account's list, which is
            // published on the account's relays.
            let core = try await options.core(relays: true, settle: 5)
            try await core.perform(.unregisterPush).orThrow()
            await core.shutdown()
        }
    }

    struct Sync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Send the archive state of every session.")
        @OptionGroup var options: ClientOptions
        func run() async throws { try await options.core().perform(.syncPush).orThrow() }
    }
}
