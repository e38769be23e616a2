import ArgumentParser
import Foundation
import LinkstrCore
import Logging
import NostrProtocol

/// Options every client command takes.
struct ClientOptions: ParsableArguments {
    @Option(help: "Data directory (database and secrets); default $LINKSTR_DATA_DIR or ~/.linkstr.")
    var dataDir: String?
    @Option(help: "Push gateway base URL for push commands and typed pushes; default $LINKSTR_PUSH_URL.")
    var pushURL: String?
    @Flag(help: "Print JSON instead of text (read commands).") var json = false
    @Flag(help: "Send to recipients' inbox relays on loopback or private addresses too (local setups).")
    var allowPrivateRelays = false

    var directory: URL {
        if let dataDir { return URL(fileURLWithPath: dataDir) }
        if let env = ProcessInfo.processInfo.environment["LINKSTR_DATA_DIR"], !env.isEmpty { return URL(fileURLWithPath: env) }
        return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".linkstr")
    }

    /// Opens the core; with `relays`, also connects and waits up to `settle` seconds for history.
    func core(relays: Bool = false, settle: Double = 0) async throws -> LinkstrAppCore {
        var configuration = CoreConfiguration(dataDirectory: directory)
        configuration.allowPrivateRecipientRelays =
            allowPrivateRelays || ProcessInfo.processInfo.environment["LINKSTR_ALLOW_PRIVATE_RELAYS"] == "1"
        if let url = pushURL ?? ProcessInfo.processInfo.environment["LINKSTR_PUSH_URL"], !url.isEmpty {
            guard let parsed = URL(string: url), parsed.scheme == "http" || parsed.scheme == "https" else {
                throw ValidationError("--push-url must be an http(s) URL")
            }
            configuration.pushGateway = parsed
        }
        var logger = Logger(label: "linkstr")
        logger.logLevel = .warning
        let core = try LinkstrAppCore(configuration: configuration, logger: logger)
        if relays {
            try await core.perform(.startRelays).orThrow()
            if settle > 0 { try await Self.waitForHistory(core, seconds: settle) }
        }
        return core
    }

    /// Waits until every enabled relay has answered (EOSE or failure) or `seconds` pass.
    static func waitForHistory(_ core: LinkstrAppCore, seconds: Double) async throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            await core.settle()
            if await core.historyComplete { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        await core.settle()
    }

    func print(_ value: JSONValue) {
        Swift.print(value.serialized)
    }
}

extension ActionResult {
    /// Throws the failure as a clean CLI error.
    @discardableResult
    func orThrow() throws -> ActionResult {
        if case .failed(let reason) = self { throw CLIError(reason) }
        return self
    }
}

struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// JSON shapes of the read commands (stable keys for scripts).
enum CLIJSON {
    static func session(_ row: SessionRow) -> JSONValue {
        .object([
            "id": .string(row.id), "name": .string(row.name), "archived": .bool(row.isArchived), "unread": .integer(Int64(row.unreadCount)),
            "members": .integer(Int64(row.memberCount)), "creator": .bool(row.isCreator), "active_member": .bool(row.isActiveMember),
            "last_activity": .integer(row.lastActivity),
        ])
    }

    static func post(_ post: PostView) -> JSONValue {
        var fields: [String: JSONValue] = [
            "id": .string(post.id), "author": .string(post.author), "author_name": .string(post.authorName), "own": .bool(post.isOwn),
            "url": .string(post.url), "created_at": .integer(post.createdAt), "unread": .bool(!post.isRead),
            "reactions": .array(
                post.reactions.map { reaction in
                    .object([
                        "emoji": .string(reaction.emoji), "count": .integer(Int64(reaction.count)), "mine": .bool(reaction.includesMe),
                        "participants": .array(reaction.participants.map { .string($0) }),
                    ])
                }),
        ]
        if let note = post.note { fields["note"] = .string(note) }
        if let provider = post.provider { fields["provider"] = .string(provider.rawValue) }
        return .object(fields)
    }

    static func member(_ member: MemberView) -> JSONValue {
        .object([
            "pubkey": .string(member.pubkey), "name": .string(member.displayName), "creator": .bool(member.isCreator),
            "active": .bool(member.isActive),
        ])
    }

    static func contact(_ contact: ContactView) -> JSONValue {
        var fields: [String: JSONValue] = [
            "pubkey": .string(contact.pubkey), "npub": .string(contact.npub), "name": .string(contact.displayName),
        ]
        if let alias = contact.alias { fields["alias"] = .string(alias) }
        return .object(fields)
    }

    static func relay(_ row: RelayRow) -> JSONValue {
        var fields: [String: JSONValue] = ["url": .string(row.url), "enabled": .bool(row.enabled), "status": .string(row.status.label)]
        if let error = row.status.errorText { fields["error"] = .string(error) }
        return .object(fields)
    }
}
