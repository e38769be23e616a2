import Crypto
import Foundation
import LinkstrWire
import Logging
import NostrProtocol
import NostrRelay

extension LinkstrAppCore {
    static let currentAccountSecret = "current-account"
    static func keySecret(_ pubkey: String) -> String { "nsec.\(pubkey)" }
    static func dataKeySecret(_ pubkey: String) -> String { "datakey.\(pubkey)" }

    func run(_ action: AppAction) async throws -> ActionResult {
        switch action {
        case .createIdentity: try signIn(Keys.generate())
        case .importIdentity(let text): try importIdentity(text)
        case .logout(let clearData): try await logout(clearData: clearData)
        case .deleteAccount: try await deleteAccount()
        case .addRelay(let text): try addRelay(text)
        case .removeRelay(let text): try removeRelay(text)
        case .setRelayEnabled(let text, let enabled): try setRelayEnabled(text, enabled)
        case .resetRelays: try saveRelays(configuration.defaultRelays.map { RelayEntry(url: $0) })
        case .startRelays: try await startRelays()
        case .stopRelays: await stopRelays()
        case .addInboxRelay(let text): try await addInboxRelay(text)
        case .removeInboxRelay(let text): try await removeInboxRelay(text)
        case .addContact(let text, let alias): try await addContact(text, alias: alias)
        case .removeContact(let text): try await removeContact(text)
        case .setAlias(let pubkey, let alias): try setAlias(alias, for: pubkey)
        case .createSession(let name, let members): return .navigate(sessionID: try await createSession(name: name, members: members))
        case .setSessionMembers(let sessionID, let members):
            try await updateMembers(sessionID, members: try parseMembers(members), name: nil)
        case .renameSession(let sessionID, let name): try await renameSession(sessionID, to: name)
        case .deleteSession(let sessionID): try await deleteSession(sessionID)
        case .setArchived(let sessionID, let archived): try await setArchived(sessionID, archived)
        case .setListMode(let mode): listMode = mode
        case .openSession(let sessionID): try openSession(sessionID)
        case .openPost(let postID): try openPost(postID)
        case .post(let sessionID, let url, let note): return .posted(postID: try await post(sessionID: sessionID, url: url, note: note))
        case .toggleReaction(let postID, let emoji): try await toggleReaction(postID: postID, emoji: emoji)
        case .deletePost(let postID): try await deletePost(postID)
        case .registerPush(let token, let environment, let relayWatch, let inbox):
            try await registerPush(token, environment: environment, relayWatch: relayWatch, inbox: inbox)
        case .unregisterPush: try await unregisterPush()
        case .syncPush: try await syncPush()
        case .dismissToast: toast = nil
        }
        return .done
    }

    // MARK: Identity

    func signedIn() throws(CoreError) -> Account {
        guard let account else { throw .notSignedIn }
        return account
    }

    /// The account named by the secret store's `current-account`, loaded (at start-up).
    static func loadCurrentAccount(secrets: any SecretStore, store: LinkstrStore?, configuration: CoreConfiguration) throws -> Account? {
        guard let bytes = try secrets.read(currentAccountSecret), let pubkey = String(bytes: bytes, encoding: .utf8),
            let secret = try secrets.read(keySecret(pubkey)), let store
        else { return nil }
        return try makeAccount(Keys(secretKey: SecretKey(bytes: secret)), store: store, secrets: secrets, configuration: configuration)
    }

    private func signIn(_ keys: Keys) throws {
        guard account == nil else { throw CoreError.alreadySignedIn }
        let pubkey = keys.publicKey.hex
        try secrets.write(Self.keySecret(pubkey), Hex.decode(keys.secretKey.exportHex()) ?? [])
        try openAccount(keys)
        try secrets.write(Self.currentAccountSecret, Array(pubkey.utf8))
    }

    private func importIdentity(_ text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let secret = try? SecretKey(parsing: trimmed) else { throw CoreError.invalidSecretKey }
        try signIn(Keys(secretKey: secret))
    }

    private func deleteAccount() async throws {
        let account = try signedIn()
        let relays = account.relays.filter(\.enabled).map(\.url)
        try await pool.waitForWritableRelay(timeout: configuration.sendTimeout)
        let emptyFollows = FollowList.make(keys: account.keys, entries: [], createdAt: account.contacts.nextCreatedAt())
        let vanish = VanishRequest.make(keys: account.keys, relays: relays.isEmpty ? nil : relays)
        try await pool.publish([emptyFollows, vanish])
        try await logout(clearData: true)
    }

    private func openAccount(_ keys: Keys) throws {
        guard let store else { throw CoreError.storeUnavailable(storeError?.description ?? "the local store is unavailable") }
        account = try Self.makeAccount(keys, store: store, secrets: secrets, configuration: configuration)
        try saveRelays(account!.relays)
    }

    /// Loads an account's rows with its data key (created on first use), defaulting the relays
    /// when the list is empty (boot).
    static func makeAccount(_ keys: Keys, store: LinkstrStore, secrets: any SecretStore, configuration: CoreConfiguration) throws -> Account
    {
        let pubkey = keys.publicKey.hex
        let dataKey: [UInt8]
        if let existing = try secrets.read(dataKeySecret(pubkey)) {
            dataKey = existing
        } else {
            dataKey = FieldCipher.generateKey().withUnsafeBytes { Array($0) }
            try secrets.write(dataKeySecret(pubkey), dataKey)
        }
        let accountStore = store.account(pubkey, cipher: FieldCipher(key: .init(data: dataKey), owner: pubkey))
        let ledger = try accountStore.loadLedger()
        let contacts = try accountStore.decoded(ContactBook.self, for: "contacts") ?? ContactBook()
        let inbox = try accountStore.decoded(InboxRelayBook.self, for: "inbox_relays") ?? InboxRelayBook()
        let profiles = try accountStore.decoded(ProfileNames.self, for: "profiles") ?? ProfileNames()
        var relays = try accountStore.decoded([RelayEntry].self, for: "relays") ?? []
        if relays.isEmpty { relays = configuration.defaultRelays.map { RelayEntry(url: $0) } }
        let pushDevice = try accountStore.decoded(PushDevice.self, for: "push_device")
        let registrar = configuration.pushGateway.map { PushRegistrar(baseURL: $0, keys: keys, transport: configuration.pushTransport) }
        return Account(
            keys: keys, store: accountStore, ledger: ledger, contacts: contacts, profiles: profiles, relays: relays, inbox: inbox,
            archived: try accountStore.archivedSessions(),
            registrar: registrar, pushDevice: pushDevice)
    }

    private func logout(clearData: Bool) async throws {
        let account = try signedIn()
        // Unregister with the old key while we still have it; a gateway that cannot be reached
        // does not keep the user signed in.
        if let registrar = account.registrar, let device = account.pushDevice {
            do { try await registrar.unregister(deviceToken: device.token) } catch {
                logger.info("unregister failed at logout", metadata: ["error": Self.logValue(error)])
            }
            self.account?.pushDevice = nil
            try? savePushDevice()
        }
        await pool.stop()
        resetRelayRun()
        relayStatuses = [:]
        openSessionID = nil
        openPostID = nil
        notifications = []
        self.account = nil
        try secrets.delete(Self.currentAccountSecret)
        if clearData {
            try account.store.eraseAll()
            try secrets.delete(Self.dataKeySecret(account.me))
            try secrets.delete(Self.keySecret(account.me))
        }
    }

    // MARK: Relays

    private func addRelay(_ text: String) throws {
        guard let url = RelayEntry.normalize(text) else { throw CoreError.invalidRelayURL(text) }
        var relays = try signedIn().relays
        guard !relays.contains(where: { $0.url == url }) else { throw CoreError.duplicateRelay }
        relays.append(RelayEntry(url: url))
        try saveRelays(relays)
    }

    private func removeRelay(_ text: String) throws {
        let url = RelayEntry.normalize(text) ?? text
        var relays = try signedIn().relays
        guard relays.contains(where: { $0.url == url }) else { throw CoreError.unknownRelay }
        relays.removeAll { $0.url == url }
        try saveRelays(relays)
    }

    private func setRelayEnabled(_ text: String, _ enabled: Bool) throws {
        let url = RelayEntry.normalize(text) ?? text
        var relays = try signedIn().relays
        guard let index = relays.firstIndex(where: { $0.url == url }) else { throw CoreError.unknownRelay }
        relays[index].enabled = enabled
        try saveRelays(relays)
    }

    private func stopRelays() async {
        await pool.stop()
        resetRelayRun()
    }

    // MARK: Inbox relays

    private func addInboxRelay(_ text: String) async throws {
        let account = try signedIn()
        let list: [RelayURL]
        do { list = try account.inbox.adding(text) } catch { throw CoreError.invalidInboxRelay(error.description) }
        try await publishInboxList(list)
    }

    private func removeInboxRelay(_ text: String) async throws {
        let account = try signedIn()
        let list: [RelayURL]
        do { list = try account.inbox.removing(text) } catch { throw CoreError.invalidInboxRelay(error.description) }
        try await publishInboxList(list)
    }

    private func publishInboxList(_ relays: [RelayURL]) async throws {
        let account = try signedIn()
        let event = InboxRelayList.event(author: account.keys.publicKey, relays: relays, createdAt: account.inbox.nextCreatedAt())
            .signed(by: account.keys)
        try await pool.waitForWritableRelay(timeout: configuration.sendTimeout)
        try await pool.publish([event])
        // Applied to the account that signed it, and to no other that signed in meanwhile.
        guard self.account?.keys.publicKey == event.pubkey else { return }
        self.account?.inbox.apply(list: event)
        try saveInbox()
        if let relays = self.account?.inbox.relays { await pool.setReaders(relays) }
    }

    // MARK: Contacts

    private func addContact(_ text: String, alias: String?) async throws {
        let account = try signedIn()
        let list: [String]
        do { list = try account.contacts.adding(text, me: account.me) } catch { throw CoreError.invalidMember(error.description) }
        try await publishFollowList(list)
        if let key = try? PublicKey(parsing: text.trimmingCharacters(in: .whitespacesAndNewlines)) {
            self.account?.contacts.setAlias(alias, for: key.hex)
            try saveContacts()
        }
        await requestProfiles()
    }

    private func removeContact(_ text: String) async throws {
        let list: [String]
        let account = try signedIn()
        do { list = try account.contacts.removing(text) } catch { throw CoreError.invalidMember(error.description) }
        try await publishFollowList(list)
    }

    private func setAlias(_ alias: String?, for pubkey: String) throws {
        guard let key = try? PublicKey(parsing: pubkey) else { throw CoreError.invalidMember(pubkey) }
        _ = try signedIn()
        account?.contacts.setAlias(alias, for: key.hex)
        try saveContacts()
    }

    // MARK: Push

    private func registerPush(_ token: String, environment: PushRegistrar.Environment, relayWatch: Bool, inbox: Bool) async throws {
        let account = try signedIn()
        guard let registrar = account.registrar else { throw CoreError.pushNotConfigured }
        // The gateway's inbox is asked for first: a gateway without one changes nothing.
        var inboxRelay: RelayURL?
        if inbox {
            guard let url = try await registrar.inboxRelay() else { throw CoreError.gatewayServesNoInbox }
            inboxRelay = url
        }
        try await registrar.register(deviceToken: token, environment: environment, relayWatch: relayWatch)
        // Recorded at once, so a failure below leaves a device that can still be unregistered.
        // A relay an earlier registration added stays marked as added, to be taken out on unregister.
        var device = PushDevice(
            token: token, environment: environment.rawValue, relayWatch: relayWatch, inboxRelay: account.pushDevice?.inboxRelay)
        self.account?.pushDevice = device
        try savePushDevice()
        // Only a relay this registration puts in the list is marked: one the user listed
        // themselves stays theirs.
        if let inboxRelay, !account.inbox.relays.contains(inboxRelay.description) {
            try await addInboxRelay(inboxRelay.description)
            device.inboxRelay = inboxRelay.description
            self.account?.pushDevice = device
            try savePushDevice()
        }
        try await registrar.syncArchiveState(archived: account.archived, known: Set(account.ledger.sessions.keys))
    }

    private func unregisterPush() async throws {
        let account = try signedIn()
        guard let registrar = account.registrar else { throw CoreError.pushNotConfigured }
        guard let device = account.pushDevice else { throw CoreError.noPushDevice }
        try await registrar.unregister(deviceToken: device.token)
        self.account?.pushDevice = nil
        try savePushDevice()
        // The gateway's inbox keeps wraps only for an account with a device there. So its relay
        // leaves the account's list with the account's last device, whichever device added it,
        // and stays while another (a second phone, a reinstall) is registered.
        let listing = try await registrar.listing()
        guard listing.devices.isEmpty else { return }
        let inboxRelay: String?
        if let marked = device.inboxRelay {
            inboxRelay = marked
        } else {
            inboxRelay = try PushRegistrar.inboxRelayURL(listing.inboxRelay)?.description
        }
        if let inboxRelay, account.inbox.relays.contains(inboxRelay) { try await removeInboxRelay(inboxRelay) }
    }

    private func syncPush() async throws {
        let account = try signedIn()
        guard let registrar = account.registrar else { throw CoreError.pushNotConfigured }
        try await registrar.syncArchiveState(archived: account.archived, known: Set(account.ledger.sessions.keys))
    }

    /// The inbox relays of `recipients` (at most `maxRecipientInboxRelays` each), from the cache
    /// while fresh, else looked up on the connected relays (newest list per author; 2 s at most).
    /// A recipient whose list cannot be found gets none: the send still goes to our relays.
    func inboxRelays(of recipients: [String]) async -> [String: [String]] {
        let now = ContinuousClock.now
        let stale = recipients.filter { recipientInboxes[$0].map { now - $0.at >= configuration.recipientInboxRelaysTTL } ?? true }
        if !stale.isEmpty {
            let authors = stale.compactMap { try? PublicKey(hex: $0) }
            let events = await pool.fetch(Filter(authors: authors, kinds: [EventKind.inboxRelays]), timeout: .seconds(2))
            var newest: [String: NostrEvent] = [:]
            for event in events where event.kind == EventKind.inboxRelays && stale.contains(event.pubkey.hex) && event.isValid {
                if let known = newest[event.pubkey.hex], !InboxRelayList.newer(event, than: known) { continue }
                newest[event.pubkey.hex] = event
            }
            for recipient in stale {
                let relays = newest[recipient].flatMap(InboxRelayList.init)?.relays.map(\.description) ?? []
                recipientInboxes[recipient] = (Array(relays.prefix(Self.maxRecipientInboxRelays)), now)
            }
        }
        return recipientInboxes.filter { recipients.contains($0.key) }.mapValues { $0.relays }
    }

    // MARK: Persistence helpers

    func saveRelays(_ relays: [RelayEntry]) throws {
        guard account != nil else { throw CoreError.notSignedIn }
        account?.relays = relays
        try account?.store.setEncoded(relays, for: "relays")
    }

    func savePushDevice() throws {
        guard let account else { throw CoreError.notSignedIn }
        try account.store.setEncoded(account.pushDevice, for: "push_device")
    }

    func saveProfiles() throws {
        guard let account else { throw CoreError.notSignedIn }
        try account.store.setEncoded(account.profiles, for: "profiles")
    }

    func saveInbox() throws {
        guard let account else { throw CoreError.notSignedIn }
        try account.store.setEncoded(account.inbox, for: "inbox_relays")
    }

    func saveContacts() throws {
        guard let account else { throw CoreError.notSignedIn }
        try account.store.setEncoded(account.contacts, for: "contacts")
    }

    /// Saves what the ledger changed since the last save.
    func saveLedger() throws {
        guard var ledger = account?.ledger else { return }
        let changes = ledger.takeChanges()
        account?.ledger = ledger
        try account?.store.save(changes, from: ledger)
    }

    private func markRead(_ postIDs: [String]) throws {
        guard account != nil else { return }
        if account!.ledger.markRead(postIDs) > 0 { try saveLedger() }
    }

    // MARK: Sessions

    func parseMembers(_ inputs: [String]) throws(CoreError) -> Set<String> {
        var members = Set<String>()
        for input in inputs {
            guard let key = try? PublicKey(parsing: input.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw .invalidMember(input)
            }
            members.insert(key.hex)
        }
        return members
    }

    func creatorSession(_ sessionID: String) throws(CoreError) -> SessionLedger.Session {
        let account = try signedIn()
        guard let session = account.ledger.sessions[sessionID] else { throw .unknownSession }
        guard session.creator == account.me else { throw .notCreator }
        return session
    }

    private func createSession(name: String, members: [String]) async throws -> String {
        let account = try signedIn()
        guard !name.isBlank else { throw CoreError.blankSessionName }
        let snapshot = try parseMembers(members).union([account.me])
        let sessionID = Self.newOperationID()
        let payload = LinkstrPayload(
            conversationID: sessionID, rootID: Self.newOperationID(), kind: .sessionCreate,
            sessionName: name.trimmingWhitespaceAndNewlines(), memberPubkeys: snapshot.sorted())
        try await send(payload, to: snapshot)
        return sessionID
    }

    private func updateMembers(_ sessionID: String, members: Set<String>, name: String?) async throws {
        let session = try creatorSession(sessionID)
        let me = try signedIn().me
        let snapshot = members.union([me])
        // Both the previous and the new members hear of it, so removed members learn they were.
        let payload = LinkstrPayload(
            conversationID: sessionID, rootID: Self.newOperationID(), kind: .sessionMembers,
            sessionName: name ?? session.name, memberPubkeys: snapshot.sorted())
        try await send(payload, to: session.membership.active.union(snapshot), notBefore: session.version.createdAt + 1)
    }

    private func renameSession(_ sessionID: String, to name: String) async throws {
        guard !name.isBlank else { throw CoreError.blankSessionName }
        let session = try creatorSession(sessionID)
        try await updateMembers(sessionID, members: session.membership.active, name: name.trimmingWhitespaceAndNewlines())
    }

    private func deleteSession(_ sessionID: String) async throws {
        let session = try creatorSession(sessionID)
        let account = try signedIn()
        let ownWraps = account.ledger.posts(in: sessionID).filter { $0.author == account.me }.flatMap(\.wrapIDs)
        let payload = LinkstrPayload(conversationID: sessionID, rootID: Self.newOperationID(), kind: .sessionDelete)
        try await send(payload, to: session.membership.everKnown.union([account.me]))
        await requestRelayDeletion(of: ownWraps)
    }

    private func setArchived(_ sessionID: String, _ archived: Bool) async throws {
        let account = try signedIn()
        guard account.ledger.sessions[sessionID] != nil else { throw CoreError.unknownSession }
        try account.store.setArchived(sessionID, archived)
        if archived { self.account?.archived.insert(sessionID) } else { self.account?.archived.remove(sessionID) }
        // The gateway skips archived conversations; a failed sync is reported, the local flag stays.
        if let registrar = account.registrar, account.pushDevice != nil {
            try await registrar.syncArchiveState(archived: archived ? [sessionID] : [], known: [sessionID])
        }
    }

    /// nil closes the open session (and post).
    private func openSession(_ sessionID: String?) throws {
        guard let sessionID else {
            openSessionID = nil
            openPostID = nil
            return
        }
        let account = try signedIn()
        guard account.ledger.sessions[sessionID] != nil else { throw CoreError.unknownSession }
        openSessionID = sessionID
        try markRead(account.ledger.posts(in: sessionID).map(\.id))
    }

    /// nil closes the open post and leaves its session open.
    private func openPost(_ postID: String?) throws {
        guard let postID else {
            openPostID = nil
            return
        }
        guard let post = try signedIn().ledger.posts[postID] else { throw CoreError.unknownPost }
        openSessionID = post.sessionID
        openPostID = postID
        try markRead([postID])
    }

    // MARK: Posts and reactions

    private func activeSession(_ sessionID: String) throws(CoreError) -> SessionLedger.Session {
        let account = try signedIn()
        guard let session = account.ledger.sessions[sessionID] else { throw .unknownSession }
        guard session.membership.isActiveNow(account.me) else { throw .notActiveMember }
        return session
    }

    private func post(sessionID: String, url: String, note: String?) async throws -> String {
        let session = try activeSession(sessionID)
        guard let normalized = LinkURL.normalize(url) else { throw CoreError.invalidURL }
        let trimmed = note?.trimmingWhitespaceAndNewlines()
        let payload = LinkstrPayload(
            conversationID: sessionID, kind: .root, url: normalized, note: (trimmed?.isEmpty ?? true) ? nil : trimmed)
        // Not before the membership state, so every current member counts as a member when it was sent.
        return try await send(payload, to: session.membership.active, notBefore: session.version.createdAt)
    }

    private func toggleReaction(postID: String, emoji: String) async throws {
        let account = try signedIn()
        guard !emoji.isBlank else { throw CoreError.blankEmoji }
        guard let post = account.ledger.posts[postID] else { throw CoreError.unknownPost }
        let session = try activeSession(post.sessionID)
        let key = Reaction.Key(sessionID: post.sessionID, rootID: postID, emoji: emoji, sender: account.me)
        let active = !(account.ledger.reactions[key]?.isActive ?? false)
        let payload = LinkstrPayload(conversationID: post.sessionID, rootID: postID, kind: .reaction, emoji: emoji, reactionActive: active)
        let after = max(session.version.createdAt, (account.ledger.reactions[key]?.order.createdAt ?? 0) + 1)
        try await send(payload, to: session.membership.active, notBefore: after)
    }

    private func deletePost(_ postID: String) async throws {
        let account = try signedIn()
        guard let post = account.ledger.posts[postID] else { throw CoreError.unknownPost }
        guard post.author == account.me else { throw CoreError.notAuthor }
        guard let session = account.ledger.sessions[post.sessionID] else { throw CoreError.unknownSession }
        let payload = LinkstrPayload(conversationID: post.sessionID, rootID: postID, kind: .rootDelete)
        try await send(payload, to: session.membership.everKnown.union([account.me]))
        await requestRelayDeletion(of: post.wrapIDs)
    }

    // MARK: Sending

    /// Wraps `payload` for `recipients` (plus our own copy), waits for a relay that takes writes,
    /// publishes, and once every wrap was accepted somewhere applies the message locally with all
    /// its wrap ids. Returns the rumor id. Nothing is queued for a later retry.
    @discardableResult
    func send(_ payload: LinkstrPayload, to recipients: Set<String>, notBefore: Int64 = 0) async throws -> String {
        let account = try signedIn()
        let keys = recipients.sorted().compactMap { try? PublicKey(hex: $0) }
        // Rumor times are whole seconds and the order rule breaks ties by random ids: our own
        // messages that must come after a state (a snapshot after the last one, a reaction toggle
        // after the last toggle) are dated after it, so they win everywhere.
        let createdAt = max(UnixTime.now(), notBefore)
        var payload = payload
        payload.timestamp = createdAt
        let (rumor, wraps) = try LinkstrRumor.wraps(payload, from: account.keys, to: keys, createdAt: createdAt)
        try await pool.waitForWritableRelay(timeout: configuration.sendTimeout)
        // Our own copies must not wake our own devices through the gateway's relay watcher: say
        // so before they can reach a relay. Best effort: a send never fails for push reasons.
        let pushes = payload.kind == .root || (payload.kind == .reaction && payload.reactionActive == true)
        if pushes, let registrar = account.registrar, account.pushDevice?.relayWatch == true {
            let ownCopies = wraps.filter { $0.firstTagValue("p") == account.me }.map(\.id.hex)
            do { try await registrar.suppress(wrapIDs: ownCopies) } catch {
                logger.info("suppression failed", metadata: ["error": Self.logValue(error)])
            }
        }
        // NIP-17: each wrap also goes to its recipient's inbox relays, ours to our own.
        let inboxes = await inboxRelays(of: keys.map(\.hex))
        var addressed: [EventID: [String]] = [:]
        for wrap in wraps {
            guard let recipient = wrap.firstTagValue("p") else { continue }
            addressed[wrap.id] = recipient == account.me ? account.inbox.relays : inboxes[recipient] ?? []
        }
        try await pool.publish(wraps, addressed: addressed)
        var ledger = account.ledger
        for wrap in wraps {
            let message = LinkstrMessage(
                wrapID: wrap.id, rumorID: rumor.id, sender: account.keys.publicKey, createdAt: rumor.createdAt, payload: payload)
            _ = ledger.ingest(message, origin: .local)
        }
        self.account?.ledger = ledger
        try saveLedger()
        // After relay acceptance: typed pushes for roots and active reactions, to the others.
        let others = recipients.subtracting([account.me]).sorted()
        if pushes, let registrar = account.registrar, !others.isEmpty {
            let type: PushRegistrar.NotificationType = payload.kind == .root ? .newPost : .newEmojiReaction
            do {
                _ = try await registrar.enqueuePush(
                    type, eventID: rumor.id.hex, conversationID: payload.conversationID, recipients: others,
                    emoji: payload.kind == .reaction ? payload.emoji : nil,
                    postID: payload.kind == .reaction ? payload.rootID : nil)
            } catch {
                logger.info("push request failed", metadata: ["error": Self.logValue(error)])
            }
        }
        return rumor.id.hex
    }

    /// A kind-5 request for our own wraps (best effort: the linkstr delete notice already went out).
    /// It waits for a writable relay like any send: a relay that dropped between the notice and
    /// the request would otherwise keep the wraps for good.
    private func requestRelayDeletion(of wrapIDs: [String]) async {
        guard let account, !wrapIDs.isEmpty else { return }
        let ids = wrapIDs.compactMap { try? EventID(hex: $0) }
        let request = DeletionRequest.make(keys: account.keys, eventIDs: ids, kinds: [GiftWrap.wrapKind])
        do {
            try await pool.waitForWritableRelay(timeout: configuration.sendTimeout)
            try await pool.publish([request])
        } catch {
            logger.info("kind-5 request not accepted", metadata: ["error": Self.logValue(error)])
        }
    }

    private func publishFollowList(_ pubkeys: [String]) async throws {
        let account = try signedIn()
        let entries = pubkeys.compactMap { try? PublicKey(hex: $0) }.map { FollowList.Entry(pubkey: $0) }
        let event = FollowList.make(keys: account.keys, entries: entries, createdAt: account.contacts.nextCreatedAt())
        try await pool.waitForWritableRelay(timeout: configuration.sendTimeout)
        try await pool.publish([event])
        self.account?.contacts.apply(followList: event)
        try saveContacts()
    }

    /// 32 uppercase hex characters (a UUID without dashes), as linkstr writes session and operation ids.
    static func newOperationID() -> String { UUID().uuidString.replacingOccurrences(of: "-", with: "") }
}
