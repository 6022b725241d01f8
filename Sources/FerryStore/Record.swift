import FerryModel

/// A record as the store returns it: its space, its current version and the change-log sequence
/// number of its latest change.
public struct Record: Sendable, Hashable {
    public var space: String
    public var version: RecordVersion
    /// The change-log sequence number of the change that made this version current.
    public var seq: Int64

    public init(space: String, version: RecordVersion, seq: Int64) {
        self.space = space
        self.version = version
        self.seq = seq
    }

    public var entity: String { version.entity }
    public var id: String { version.id }
    public var hlc: Stamp { version.hlc }
    public var deleted: Bool { version.deleted }
    public var payload: String? { version.payload }
    public var attachments: [String] { version.attachments }
}

/// One record of a local batch write.
public struct PutRequest: Sendable, Hashable {
    public var entity: String
    /// nil: the store assigns a new id (an upper-case UUID v4 by default).
    public var id: String?
    /// The text of a JSON object.
    public var payload: String
    public var attachments: [String]
    /// The caller serialized `payload` itself from a JSON object no deeper than the store's
    /// payload depth limit (as ferryd does with what its API parsed), so the store checks only
    /// its size instead of parsing it again.
    public var payloadIsWellFormed: Bool

    public init(entity: String, id: String? = nil, payload: String, attachments: [String] = [], payloadIsWellFormed: Bool = false) {
        self.entity = entity
        self.id = id
        self.payload = payload
        self.attachments = attachments
        self.payloadIsWellFormed = payloadIsWellFormed
    }
}

/// What applying one remote version did.
public enum ApplyResult: Sendable, Equatable {
    /// It became the current version; `seq` is its change-log number.
    case applied(seq: Int64)
    /// The store had this exact version already.
    case duplicate
    /// It lost to the current version (and was kept as a losing version when it came from
    /// another device than the winner).
    case lost
    /// It was malformed and nothing was written.
    case rejected(FerryError)
}

/// A space as the store describes it.
public struct SpaceInfo: Sendable, Hashable {
    public enum Kind: String, Sendable { case `private`, shared }
    public var name: String
    public var kind: Kind
    public var ownerID: String?
    /// Unix milliseconds.
    public var createdAt: Int64
}

/// A version that lost a merge.
public struct LosingVersion: Sendable, Hashable {
    public var version: RecordVersion
    /// Where the losing version came from.
    public var origin: ChangeOrigin
    /// The stamp of the version it lost to.
    public var winner: Stamp
    /// When it lost, in unix milliseconds.
    public var lostAt: Int64
}

/// One outbox entry: a record some transport still needs, with each transport's state.
public struct OutboxEntry: Sendable, Hashable {
    public struct Delivery: Sendable, Hashable {
        public var transport: String
        public var acknowledged: Stamp?
        /// The transport's error text when it rejected the version `errorStamp`.
        public var error: String?
        public var errorStamp: Stamp?
    }
    public var space: String
    public var entity: String
    public var id: String
    public var hlc: Stamp
    public var seq: Int64
    /// Unix milliseconds.
    public var queuedAt: Int64
    public var deliveries: [Delivery]
}

/// A configured transport of a space.
public struct TransportInfo: Sendable, Hashable {
    public var space: String
    public var name: String
    public var kind: String
    /// Transport-specific configuration (JSON text).
    public var config: String

    public init(space: String, name: String, kind: String, config: String) {
        self.space = space
        self.name = name
        self.kind = kind
        self.config = config
    }
}

/// Store-wide counts.
public struct StoreStats: Sendable, Hashable {
    public var records: Int
    public var tombstones: Int
    public var outbox: Int
    /// Outbox entries of spaces with no transport (kept for the first one added).
    public var outboxWithoutTransport: Int
    public var outboxErrors: Int
    public var lastSeq: Int64
    public var attachments: Int
    public var attachmentBytes: Int64
    /// Attachments some version references whose bytes are not here (they did not arrive
    /// within `AttachmentWaitSeconds`; the sync engine keeps looking for them).
    public var attachmentsMissing: Int = 0
}

/// What the outbox holds, for a figure kept current while writes go on: systemd's STATUS=.
///
/// Each count stops one past `limit`, so that counting costs the same on a store of millions of
/// changes as on one of a hundred thousand: a count above `limit` means "more than `limit`".
public struct OutboxCounts: Sendable, Hashable {
    /// Where counting stops unless told otherwise.
    public static let defaultLimit = 100_000

    /// Entries some transport still has to take (at most `limit + 1`).
    public var pending: Int
    /// Entries of spaces with no transport, kept for the first one added (at most `limit + 1`).
    public var withoutTransport: Int
    /// A count above this is "more than `limit`".
    public var limit: Int

    public init(pending: Int, withoutTransport: Int, limit: Int = OutboxCounts.defaultLimit) {
        self.pending = pending
        self.withoutTransport = withoutTransport
        self.limit = limit
    }
}
