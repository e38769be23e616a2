import PostgresNIO

/// Reads a row's columns in order, each decoded as its own concrete type.
///
/// PostgresNIO's `row.decode((A, B, …).self)` is generic over a parameter pack, which the
/// compiler does not specialize: every column of every row looked its type's metadata up at run
/// time, and a leased job's row has some twenty columns. Reading cell by cell keeps each decode
/// specialized. A NULL reads as nil exactly as PostgresNIO's `Optional` decoding reads it.
struct RowColumns {
    private var cells: PostgresRow.Iterator

    init(_ row: PostgresRow) { cells = row.makeIterator() }

    /// The next column, which must not be NULL.
    mutating func next<Value: PostgresDecodable>(_: Value.Type = Value.self) throws -> Value {
        try cell().decode(Value.self)
    }

    /// The next column, nil when NULL.
    mutating func optional<Value: PostgresDecodable>(_: Value.Type = Value.self) throws -> Value? {
        let cell = try cell()
        guard cell.bytes != nil else { return nil }
        return try cell.decode(Value.self)
    }

    private mutating func cell() throws -> PostgresCell {
        guard let cell = cells.next() else { throw RowColumnsError.fewerColumnsThanRead }
        return cell
    }
}

/// A statement's row had fewer columns than its decoding reads: the SQL and the Swift disagree.
enum RowColumnsError: Error, Equatable {
    case fewerColumnsThanRead
}
