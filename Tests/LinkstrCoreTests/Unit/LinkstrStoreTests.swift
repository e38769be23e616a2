import Foundation
import GRDB
import LinkstrCore
import LinkstrWire
import NostrProtocol
import Testing

/// The SQLite store (real SQLite through GRDB, files in a temporary directory): round trips,
/// owner scoping, encryption at rest, and errors that leave data untouched.
@Suite struct LinkstrStoreTests {
    typealias T = LinkstrLedgerTests

    static func temporaryDirectory() -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("linkstr-store-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A ledger with a bit of everything: sessions (one deleted), snapshots, posts read and
    /// unread, reactions active and not, a deletion watermark.
    static func populatedLedger() -> LinkstrLedger {
        var ledger = T.ledger()
        _ = ledger.ingest(T.members([T.alice, T.me], at: 150), origin: .live)
        let kept = T.root(by: T.alice, at: 120, url: "https://secret.example/kept"), gone = T.root(by: T.alice, at: 130)
        _ = ledger.ingest(kept, origin: .history)
        _ = ledger.ingest(gone, origin: .restore)
        _ = ledger.ingest(T.reaction("👍", on: kept.rumorID.hex, by: T.bob, at: 125), origin: .history)
        _ = ledger.ingest(T.reaction("👀", on: kept.rumorID.hex, by: T.me, at: 126, active: false), origin: .local)
        _ = ledger.ingest(T.rootDelete(gone.rumorID.hex, by: T.alice, at: 140), origin: .live)
        _ = ledger.ingest(T.create([T.alice, T.me], session: "GONE"), origin: .live)
        _ = ledger.ingest(T.sessionDelete(by: T.alice, at: 160, session: "GONE"), origin: .live)
        return ledger
    }

    static func expectSameState(_ loaded: LinkstrLedger, _ original: LinkstrLedger, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(loaded.sessions == original.sessions, sourceLocation: sourceLocation)
        #expect(loaded.sessionLedger.tombstones == original.sessionLedger.tombstones, sourceLocation: sourceLocation)
        #expect(loaded.posts == original.posts, sourceLocation: sourceLocation)
        #expect(loaded.reactions == original.reactions, sourceLocation: sourceLocation)
        #expect(loaded.deletions == original.deletions, sourceLocation: sourceLocation)
    }

    @Test func theLedgerSurvivesARestart() throws {
        let directory = Self.temporaryDirectory()
        let path = directory.appendingPathComponent("linkstr.sqlite").path
        let key = FieldCipher.generateKey()
        var ledger = Self.populatedLedger()
        do {
            let store = try LinkstrStore(path: path)
            try store.account(T.me.hex, cipher: FieldCipher(key: key, owner: T.me.hex)).save(ledger.takeChanges(), from: ledger)
        }
        let reopened = try LinkstrStore(path: path)
        let account = reopened.account(T.me.hex, cipher: FieldCipher(key: key, owner: T.me.hex))
        var loaded = try account.loadLedger()
        Self.expectSameState(loaded, ledger)
        #expect(loaded.posts.count == 1 && loaded.deletions.count == 1 && loaded.reactions.count == 2)
        #expect(loaded.sessions["S"]?.membership.snapshots.count == 2)
        // Seen wraps are remembered: the same wrap again is a duplicate without being opened.
        let anyWrap = try #require(loaded.posts.values.first?.wrapIDs.first)
        #expect(loaded.hasSeen(wrapID: anyWrap))
        // And history cannot resurrect what was deleted, after the restart too.
        let deleted = try #require(loaded.deletions.keys.first)
        #expect(loaded.ingest(T.root(by: T.alice, at: 130, rumorID: deleted), origin: .history).outcome == .ignored("the post was deleted"))
        #expect(loaded.ingest(T.root(by: T.alice, at: 170, session: "GONE"), origin: .live).outcome == .ignored("the session was deleted"))
    }

    @Test func laterChangesUpdateAndDeleteRows() throws {
        let store = try LinkstrStore(path: nil)
        let account = store.account(T.me.hex, cipher: FieldCipher(key: FieldCipher.generateKey(), owner: T.me.hex))
        var ledger = Self.populatedLedger()
        try account.save(ledger.takeChanges(), from: ledger)
        let post = try #require(ledger.posts.values.first)
        ledger.markRead([post.id])
        _ = ledger.ingest(T.reaction("👍", on: post.id, by: T.bob, at: 127, active: false), origin: .history)
        _ = ledger.ingest(T.rootDelete(post.id, by: T.alice, at: 141), origin: .live)
        try account.save(ledger.takeChanges(), from: ledger)
        let loaded = try account.loadLedger()
        Self.expectSameState(loaded, ledger)
        #expect(loaded.posts.isEmpty && loaded.reactions.isEmpty && loaded.deletions.count == 2)
    }

    @Test func ownersNeverSeeEachOthersRows() throws {
        let store = try LinkstrStore(path: nil)
        let mine = store.account(T.me.hex, cipher: FieldCipher(key: FieldCipher.generateKey(), owner: T.me.hex))
        let theirs = store.account(T.bob.hex, cipher: FieldCipher(key: FieldCipher.generateKey(), owner: T.bob.hex))
        var ledger = Self.populatedLedger()
        try mine.save(ledger.takeChanges(), from: ledger)
        try mine.setValue("alias data", for: "contacts")
        let other = try theirs.loadLedger()
        #expect(other.posts.isEmpty && other.sessions.isEmpty && other.deletions.isEmpty)
        #expect(try theirs.value("contacts") == nil)
        #expect(try store.owners() == [T.me.hex])
        try theirs.eraseAll()
        #expect(try mine.loadLedger().posts.count == 1, "erasing one owner leaves the other")
        try mine.eraseAll()
        #expect(try mine.loadLedger().posts.isEmpty && (try store.owners()).isEmpty)
    }

    @Test func sensitiveFieldsAreEncryptedAtRest() throws {
        let directory = Self.temporaryDirectory()
        let path = directory.appendingPathComponent("linkstr.sqlite").path
        var ledger = Self.populatedLedger()
        let store = try LinkstrStore(path: path)
        let account = store.account(T.me.hex, cipher: FieldCipher(key: FieldCipher.generateKey(), owner: T.me.hex))
        try account.save(ledger.takeChanges(), from: ledger)
        try account.setValue("Bobby the alias", for: "contacts")
        // Force everything from the WAL into the main file, then read the raw bytes.
        try store.database.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        if let wal = try? Data(contentsOf: URL(fileURLWithPath: path + "-wal")) { bytes.append(wal) }
        let raw = String(decoding: bytes, as: UTF8.self)
        #expect(!raw.contains("secret.example"), "URLs are sealed")
        #expect(!raw.contains("Friends"), "session names are sealed")
        #expect(!raw.contains("Bobby"), "account values are sealed")
        #expect(!raw.contains(T.alice.hex) && !raw.contains(T.bob.hex), "member, creator and author keys are sealed")
        #expect(raw.contains(T.me.hex), "the owner column is clear, for scoping")
    }

    @Test func theWrongKeyGivesARecoverableError() throws {
        let store = try LinkstrStore(path: nil)
        var ledger = Self.populatedLedger()
        try store.account(T.me.hex, cipher: FieldCipher(key: FieldCipher.generateKey(), owner: T.me.hex)).save(
            ledger.takeChanges(), from: ledger)
        let wrongKey = store.account(T.me.hex, cipher: FieldCipher(key: FieldCipher.generateKey(), owner: T.me.hex))
        #expect(throws: StoreError.undecryptable(column: "session_snapshots.members")) { try wrongKey.loadLedger() }
    }

    @Test func aSealedValueCannotMoveToAnotherOwnerOrColumn() throws {
        let key = FieldCipher.generateKey()
        let mine = FieldCipher(key: key, owner: "a"), theirs = FieldCipher(key: key, owner: "b")
        let sealed = mine.seal("https://x.example", column: "posts.url")
        #expect(try mine.open(sealed, column: "posts.url") == "https://x.example")
        #expect(throws: StoreError.undecryptable(column: "posts.url")) { try theirs.open(sealed, column: "posts.url") }
        #expect(throws: StoreError.undecryptable(column: "posts.note")) { try mine.open(sealed, column: "posts.note") }
        #expect(mine.seal("same", column: "c") != mine.seal("same", column: "c"), "a fresh nonce per value")
    }

    @Test func aFileThatIsNotADatabaseIsAnErrorNotACrash() throws {
        let directory = Self.temporaryDirectory()
        let path = directory.appendingPathComponent("linkstr.sqlite").path
        try Data(repeating: 0x42, count: 8192).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try LinkstrStore(path: path)
        } throws: { error in
            guard case StoreError.cannotOpen(let failedPath, _)? = error as? StoreError else { return false }
            return failedPath == path
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(repeating: 0x42, count: 8192), "the file is left as it was")
        // A directory where the file should be.
        #expect(throws: StoreError.self) { _ = try LinkstrStore(path: directory.path) }
    }

    @Test func fileSecretsAreOwnerOnly() throws {
        let directory = Self.temporaryDirectory().appendingPathComponent("secrets")
        let secrets = try FileSecretStore(directory: directory)
        try secrets.write("nsec.abc", [1, 2, 3])
        #expect(try secrets.read("nsec.abc") == [1, 2, 3])
        #expect(try secrets.read("missing") == nil)
        let fileMode =
            try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("nsec.abc").path)[.posixPermissions] as? Int
        let directoryMode = try FileManager.default.attributesOfItem(atPath: directory.path)[.posixPermissions] as? Int
        #expect(fileMode == 0o600 && directoryMode == 0o700)
        try secrets.write("nsec.abc", [4])
        #expect(try secrets.read("nsec.abc") == [4], "replaced atomically")
        #expect(throws: StoreError.secrets("invalid secret name")) { try secrets.write("../escape", [1]) }
        #expect(throws: StoreError.secrets("invalid secret name")) { try secrets.read(".hidden") }
        try secrets.delete("nsec.abc")
        #expect(try secrets.read("nsec.abc") == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty, "no temporary files left behind")
    }
}
