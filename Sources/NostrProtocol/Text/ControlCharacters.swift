extension StringProtocol {
    /// Whether the text holds an ASCII control character (U+0000–U+001F or U+007F).
    ///
    /// Identifiers a server stores or forwards must not: PostgreSQL refuses NUL in `text`, and CR,
    /// LF or NUL in an HTTP header value (an APNs collapse id or thread id) is a protocol error.
    /// Checked on the UTF-8 bytes: those code points are single bytes there, and no byte of a
    /// multi-byte sequence falls in that range.
    ///
    /// Inlinable so that each caller gets it specialized for its string type: as a generic
    /// `StringProtocol` member it walked the bytes through witness tables: ~1 % of the gateway's
    /// samples in a registration profile, since every field of every request body is checked.
    @inlinable public var containsControlCharacters: Bool {
        utf8.contains { $0 < 0x20 || $0 == 0x7F }
    }
}
