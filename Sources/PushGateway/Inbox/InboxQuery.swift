package import NostrProtocol

/// A REQ as the inbox relay serves it: the one recipient's stored wraps that its filters select.
/// Only a connection that proved the recipient's key (NIP-42) may ask, and only for gift wraps to
/// that key; anything else is a `CLOSED` with its reason.
package struct InboxQuery: Sendable, Equatable {
    /// One filter's part: `ids`, `since`, `until`, and how many (newest first).
    package struct Part: Sendable, Equatable {
        package var ids: [String]?
        package var since: Int64?
        package var until: Int64?
        package var limit: Int

        package init(ids: [String]? = nil, since: Int64? = nil, until: Int64? = nil, limit: Int) {
            self.ids = ids
            self.since = since
            self.until = until
            self.limit = limit
        }
    }

    package var recipient: String
    package var parts: [Part]

    /// The query `filters` ask for on a connection authenticated as `authenticated` (nil: not
    /// authenticated), or the `CLOSED` message that refuses them.
    package static func parse(_ filters: [Filter], authenticated: String?) -> Result<InboxQuery, InboxQueryRefusal> {
        guard let authenticated else {
            return .failure(InboxQueryRefusal("auth-required: this inbox serves gift wraps only to their recipient"))
        }
        guard !filters.isEmpty, filters.count <= 10 else { return .failure(InboxQueryRefusal("invalid: 1 to 10 filters")) }
        var parts: [Part] = []
        for filter in filters {
            guard filter.kinds == [EventKind.giftWrap], filter.authors == nil, filter.tags == ["p": [authenticated]] else {
                return .failure(
                    InboxQueryRefusal("restricted: only gift wraps (kinds [1059]) to the authenticated pubkey (#p) are served here"))
            }
            if let ids = filter.ids, ids.count > InboxRelaySettings.maxLimit {
                return .failure(InboxQueryRefusal("invalid: at most \(InboxRelaySettings.maxLimit) ids"))
            }
            parts.append(
                Part(
                    ids: filter.ids?.map(\.hex), since: filter.since, until: filter.until,
                    limit: min(max(filter.limit ?? InboxRelaySettings.maxLimit, 0), InboxRelaySettings.maxLimit)))
        }
        return .success(InboxQuery(recipient: authenticated, parts: parts))
    }

    /// Whether a wrap to `recipient` created at `createdAt` is one the subscription's filters
    /// select (a live event: `limit` does not apply).
    package func matches(id: String, recipient: String, createdAt: Int64) -> Bool {
        guard recipient == self.recipient else { return false }
        return parts.contains { part in
            (part.ids.map { $0.contains(id) } ?? true) && (part.since.map { createdAt >= $0 } ?? true)
                && (part.until.map { createdAt <= $0 } ?? true)
        }
    }
}

/// Why the inbox relay closes a REQ: a NIP-01 `CLOSED` message with its prefix.
package struct InboxQueryRefusal: Error, Sendable, Equatable {
    package let message: String
    package init(_ message: String) { self.message = message }
}
