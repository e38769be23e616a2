public import Foundation
public import NostrRelay

/// Where the core keeps its data and how it talks to relays.
public struct CoreConfiguration: Sendable {
    /// Holds `linkstr.sqlite` and, with the default secret store, `secrets/`.
    public var dataDirectory: URL
    /// Used when the account's relay list is empty, and by `resetRelays`.
    public var defaultRelays: [String] = RelayEntry.defaults
    /// How long a send waits for a relay that takes writes (linkstr: 12 s).
    public var sendTimeout: Duration = .seconds(12)
    /// The live subscription's `limit` and the first backfill page (linkstr: 500).
    public var historyPageSize = 500
    /// The largest backfill page (linkstr: 4000).
    public var maxHistoryPageSize = 4000
    /// Wraps opened, then messages applied, per step of history work; actions run between steps.
    public var historyStepSize = 512
    public var relayConfiguration = RelayConfiguration()
    /// Relays that recipients' inbox lists name may be on loopback, private or other non-public
    /// addresses (local development, tests). Off, a send never connects there: a list is anyone's
    /// to write.
    public var allowPrivateRecipientRelays = false
    /// How long a recipient's inbox relays (their kind 10050 list), once looked up, are used
    /// without looking again: a newer list reaches a sender's sends after this long at most.
    public var recipientInboxRelaysTTL: Duration = .seconds(3600)
    /// The secret store; nil means the Keychain on Apple platforms and files under
    /// `dataDirectory/secrets` (mode 0600) elsewhere.
    public var secretStore: (any SecretStore)?
    /// The push gateway (`linkstr-push`); nil disables push registration and typed pushes.
    public var pushGateway: URL?
    /// How the registrar reaches the gateway.
    public var pushTransport: any HTTPTransport = URLSessionTransport()
    /// Called on the core, before each step that applies a chunk of history, with how many of
    /// the page's messages are applied so far and how many it holds. A test queues an action
    /// from here to pin where in a restore that action lands; timing it from outside races the
    /// restore on a loaded machine.
    package var willApplyHistoryStep: (@Sendable (_ applied: Int, _ total: Int) -> Void)?

    public init(dataDirectory: URL) {
        self.dataDirectory = dataDirectory
    }
}
