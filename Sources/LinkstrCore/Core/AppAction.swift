/// What the UI (or the CLI) asks the core to do. Actions are processed one at a time, in order.
public enum AppAction: Sendable, Equatable {
    // Identity
    case createIdentity
    /// `nsec` or 64-hex secret key.
    case importIdentity(String)
    /// Keeps local data (and the key) for a later sign-in unless `clearData`, which erases this
    /// account's rows, data key and secret key.
    case logout(clearData: Bool)
    /// Publishes an empty follow list and a NIP-62 request to vanish to the account's relays
    /// (send-gated: refused when no relay takes writes), then logs out clearing all local data.
    case deleteAccount

    // Relays
    case addRelay(String)
    case removeRelay(String)
    case setRelayEnabled(String, Bool)
    case resetRelays
    /// Foreground: (re)build relay connections from scratch and sync.
    case startRelays
    /// Background: stop relay connections.
    case stopRelays

    /// Adds a relay to the account's NIP-17 inbox list (kind 10050) and publishes the list
    /// (send-gated).
    case addInboxRelay(String)
    case removeInboxRelay(String)

    // Contacts
    case addContact(String, alias: String?)
    case removeContact(String)
    case setAlias(pubkey: String, alias: String?)

    // Sessions
    case createSession(name: String, members: [String])
    case setSessionMembers(sessionID: String, members: [String])
    case renameSession(sessionID: String, name: String)
    case deleteSession(sessionID: String)
    case setArchived(sessionID: String, Bool)
    case setListMode(SessionListMode)
    /// Opens a session (marks its visible inbound posts read); nil closes it.
    case openSession(String?)
    /// Opens a post (marks it read); nil closes it.
    case openPost(String?)

    // Posts and reactions
    case post(sessionID: String, url: String, note: String?)
    case toggleReaction(postID: String, emoji: String)
    case deletePost(postID: String)

    // Push (needs `CoreConfiguration.pushGateway`)
    /// Registers this device's APNs token with the gateway for the signed-in account. `inbox`:
    /// the gateway's own inbox relay joins the account's NIP-17 relay list (kind 10050), keeping
    /// its other entries, so senders deliver there and the gateway pushes what arrives.
    case registerPush(deviceToken: String, environment: PushRegistrar.Environment, relayWatch: Bool, inbox: Bool = false)
    /// Unregisters the registered device, and takes the gateway's inbox relay out of the list if
    /// registering put it there.
    case unregisterPush
    /// Sends the archive state of every known session.
    case syncPush

    case dismissToast
}

/// What `perform` reports once an action is done.
public enum ActionResult: Sendable, Equatable {
    case done
    /// The session to navigate to (after `createSession`).
    case navigate(sessionID: String)
    /// The post's id (after `post`).
    case posted(postID: String)
    case failed(String)
}
