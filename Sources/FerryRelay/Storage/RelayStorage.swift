import FerrySync

/// The relay's persistent state: owners, grants and tokens, events with their compaction, blob
/// metadata and pairing codes. `SQLiteRelayStorage` (one relay process) and
/// `PostgresRelayStorage` (any number of relay processes on one database) implement it alike;
/// the storage tests run against both.
///
/// Every method is synchronous, thread-safe and atomic: it either does all it says or throws
/// and changes nothing. Times are milliseconds since the epoch, passed in by the caller (the
/// clock is the service's seam).
public protocol RelayStorage: Sendable {
    // Owners
    /// Creates `owner` with an optional quota override; no-op when it exists (quota unchanged).
    func createOwner(_ owner: OwnerID, quotaBytes: Int64?, now: Int64) throws(RelayStorageError)
    /// Sets (or with nil clears) the owner's quota override.
    /// - Throws: `.unknownOwner`.
    func setQuota(_ owner: OwnerID, quotaBytes: Int64?) throws(RelayStorageError)
    /// Usage counters and the quota override; nil for an unknown owner.
    func usage(_ owner: OwnerID) throws(RelayStorageError) -> OwnerUsage?
    /// Deletes the owner's events and blob records (keeping the owner, its tokens and its
    /// sequence), moves its cursor offset past every cursor handed out before (those are
    /// refused from then on, as after a restore), and returns the blob keys whose files the
    /// caller removes.
    func deleteOwnerData(_ owner: OwnerID) throws(RelayStorageError) -> [String]
    /// Events stored over all owners (for metrics).
    func totalEvents() throws(RelayStorageError) -> Int64

    // Tokens
    /// Stores a new token for `owner` with `role`.
    /// - Throws: `.unknownOwner`.
    func addToken(_ token: NewToken, now: Int64) throws(RelayStorageError)
    /// The grants of the token with SHA-256 `hash`, or nil for an unknown or revoked token.
    /// Records the use (at most once a minute per token).
    func authenticate(tokenHash: [UInt8], now: Int64) throws(RelayStorageError) -> Authenticated?
    /// The live tokens granted on `owner`.
    func tokens(of owner: OwnerID) throws(RelayStorageError) -> [TokenInfo]
    /// Revokes token `id` on `owner`; false when no such live token.
    func revokeToken(_ id: String, owner: OwnerID, now: Int64) throws(RelayStorageError) -> Bool

    // Pairing
    /// Stores a pairing code (its hash) for `owner`.
    func addPairingCode(hash: [UInt8], owner: OwnerID, expiresAt: Int64, now: Int64) throws(RelayStorageError)
    /// Uses the code with `hash` and makes `token` for its owner in one transaction; nil when the
    /// code is unknown, used or expired (nothing changes then).
    func redeemPairingCode(hash: [UInt8], token: NewToken, now: Int64) throws(RelayStorageError) -> OwnerID?

    // Events
    /// Stores a batch in one transaction (see `PushOutcome` for each event's fate).
    /// - Throws: `.quotaExceeded` (nothing stored), `.unknownOwner`.
    func push(_ owner: OwnerID, events: [IncomingEvent], quotaBytes defaultQuota: Int64, now: Int64) throws(RelayStorageError) -> [PushOutcome]
    /// Up to `limit` events after `cursor` in sequence order, and at most about `maxBytes`
    /// (always at least one event when there is one).
    ///
    /// A cursor is an event's sequence number plus the owner's cursor offset (0 until the
    /// storage is found restored, see below). `.start` is always accepted (an empty page for an
    /// owner with nothing, or none at all), and so is every cursor handed out since the offset
    /// last moved, whatever compaction, tombstone sweeps or deleting the relay copy removed
    /// since (they keep the sequence).
    /// - Throws: `.cursorLost` when the storage holds less than the device already read, which
    ///   then starts over: `.ahead`, a cursor beyond the newest sequence number the owner was
    ///   ever given, never handed out by this storage (it was restored from an older backup, or
    ///   its data was lost). Finding one moves the owner's cursor offset past every cursor handed
    ///   out before (`Cursor.offsetAfterRestore`), and from then on `.beforeRestore` refuses
    ///   those: also the ones that the restored storage's new events have caught up with since,
    ///   which would otherwise skip those events for good. `.cursorNeverIssued`, changing
    ///   nothing, for a cursor too far ahead for any restore to explain (made up, or another
    ///   relay's): one request must not make every device of the owner start over.
    func pull(_ owner: OwnerID, after cursor: Cursor, limit: Int, maxBytes: Int) throws(RelayStorageError) -> EventPage
    /// Drops tombstones stored before `storedBefore`; returns how many.
    func dropTombstones(storedBefore: Int64) throws(RelayStorageError) -> Int

    // Blobs (the bytes are the `BlobStore`'s; the storage records and counts them)
    /// The size of blob `key` of `owner`, or nil. With `touching`, records in the same step that
    /// a device stored the blob or looked for it at that time (unix milliseconds), which keeps
    /// it from `deleteBlob` for the grace that follows.
    func blobSize(_ owner: OwnerID, key: String, touching now: Int64?) throws(RelayStorageError) -> Int64?
    /// Records blob `key` of `size` bytes, used at `now`; false when it was already there.
    /// - Throws: `.quotaExceeded` (nothing recorded).
    func addBlob(_ owner: OwnerID, key: String, size: Int64, quotaBytes defaultQuota: Int64, now: Int64) throws(RelayStorageError) -> Bool
    /// Drops the record of blob `key` (and with PostgreSQL its bytes) and its share of the
    /// owner's usage, unless a device stored it or looked for it at or after `usedSince`.
    /// The caller removes the bytes of a `.deleted` blob from a `BlobFiles`.
    func deleteBlob(_ owner: OwnerID, key: String, usedSince: Int64) throws(RelayStorageError) -> RelayBlobDeletion
}

extension RelayStorage {
    /// The size of blob `key` of `owner`, or nil.
    public func blobSize(_ owner: OwnerID, key: String) throws(RelayStorageError) -> Int64? {
        try blobSize(owner, key: key, touching: nil)
    }
}

/// What `RelayStorage.deleteBlob` did.
public enum RelayBlobDeletion: Sendable, Equatable {
    /// The record is gone (`size` bytes freed from the owner's usage).
    case deleted(size: Int64)
    /// There was none.
    case absent
    /// Kept: a device stored it or looked for it at `lastUsed` (unix milliseconds).
    case inUse(lastUsed: Int64)
}

/// A token to store: its id, hash, owner, role and device name.
public struct NewToken: Sendable, Equatable {
    public var id: String
    public var hash: [UInt8]
    public var owner: OwnerID
    public var role: Role
    public var device: String
    public init(id: String, hash: [UInt8], owner: OwnerID, role: Role, device: String) {
        self.id = id; self.hash = hash; self.owner = owner; self.role = role; self.device = device
    }
}

/// An authenticated token: its id and what it may do on which owner.
public struct Authenticated: Sendable, Equatable {
    public var tokenID: String
    public var grants: [OwnerID: Role]
    public init(tokenID: String, grants: [OwnerID: Role]) { self.tokenID = tokenID; self.grants = grants }
}

/// A token as listed.
public struct TokenInfo: Sendable, Equatable {
    public var id: String
    public var device: String
    public var role: Role
    public var createdAt: Int64
    public var lastUsedAt: Int64?
}

/// An owner's counters.
public struct OwnerUsage: Sendable, Equatable {
    public var events: Int64
    public var eventBytes: Int64
    public var blobs: Int64
    public var blobBytes: Int64
    /// The per-owner override, if any.
    public var quotaOverride: Int64?
    public var lastPushAt: Int64?
    public var usedBytes: Int64 { eventBytes + blobBytes }
}

/// One decoded event of a push, with the fields compaction needs.
public struct IncomingEvent: Sendable, Equatable {
    public var event: EventID
    public var stream: StreamID
    public var stampKey: [UInt8]
    public var deleted: Bool
    public var bytes: [UInt8]

    /// From a decoded envelope and its binary form.
    public init(header: EnvelopeHeader, bytes: [UInt8]) {
        event = header.event
        stream = header.stream
        stampKey = StampKey.make(header.stamp)
        deleted = header.deleted
        self.bytes = bytes
    }
}

/// What became of one pushed event.
public enum PushOutcome: Sendable, Equatable {
    /// Stored as the stream's current version.
    case stored
    /// Already there (same event id).
    case duplicate
    /// Older than the stream's current version: acknowledged, not kept.
    case superseded
}

/// One page of a pull.
public struct EventPage: Sendable, Equatable {
    public var events: [[UInt8]]
    public var cursor: Cursor
    public var more: Bool
}

/// Why storage failed.
public enum RelayStorageError: Error, Sendable, Equatable, CustomStringConvertible {
    case unknownOwner(OwnerID)
    case quotaExceeded(quotaBytes: Int64, usedBytes: Int64, neededBytes: Int64)
    /// A pull after a cursor the storage cannot honour: it holds less than the device read.
    case cursorLost(owner: OwnerID, cursor: Cursor, why: CursorLoss)
    /// A pull after a cursor so far beyond `newest` that no restore of this storage explains it
    /// (`Cursor.couldFollowRestore`): never handed out here. Nothing changes.
    case cursorNeverIssued(owner: OwnerID, cursor: Cursor, newest: Cursor)
    /// The database failed; `context` names the operation.
    case database(context: String, message: String)
    /// The database could not be reached (a connection refused or broken: PostgreSQL down or
    /// restarting); `context` names the operation. The request may be retried: a push whose
    /// commit got through before the connection broke is answered as duplicates then.
    case unreachable(context: String, message: String)

    public var description: String {
        switch self {
        case .unknownOwner(let o): "unknown owner \(o)"
        case .quotaExceeded(let q, let u, let n): "quota of \(q) bytes exceeded (\(u) used, \(n) needed)"
        case .cursorLost(let o, let c, let why): "cursor \(c) of owner \(o) \(why)"
        case .cursorNeverIssued(let o, let c, let newest): "cursor \(c) of owner \(o) was never handed out (the newest is \(newest))"
        case .database(let context, let message): "\(context): \(message)"
        case .unreachable(let context, let message): "\(context): the database cannot be reached: \(message)"
        }
    }
}

/// Why a pull's cursor is refused (`RelayStorageError.cursorLost`); either way the storage holds
/// less than the device read, and the device starts over.
public enum CursorLoss: Sendable, Equatable, CustomStringConvertible {
    /// Beyond `newest`, the newest cursor the owner's events were ever given: never handed out.
    case ahead(newest: Cursor)
    /// Handed out before the storage was found restored: below `lowest`, where the cursors of
    /// the owner's current numbering begin.
    case beforeRestore(lowest: Cursor)

    public var description: String {
        switch self {
        case .ahead(let newest): "is beyond the newest cursor \(newest)"
        case .beforeRestore(let lowest): "was handed out before the relay was found restored or the owner's relay copy was deleted (cursors now begin at \(lowest))"
        }
    }
}
