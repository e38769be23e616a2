/// Why the local store could not do what was asked. Every case is recoverable by the caller: the
/// core reports it as an error state, it never crashes.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The database file could not be opened or migrated (permissions, not a database, disk full).
    case cannotOpen(path: String, reason: String)
    /// A read or write failed after opening.
    case database(String)
    /// A sensitive column did not decrypt with this owner's key (key material lost or replaced).
    case undecryptable(column: String)
    /// The secret store could not be read or written.
    case secrets(String)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason): "cannot open the local store at \(path): \(reason)"
        case .database(let reason): "local store: \(reason)"
        case .undecryptable(let column): "local data in \(column) does not decrypt with this account's key"
        case .secrets(let reason): "secret store: \(reason)"
        }
    }
}
