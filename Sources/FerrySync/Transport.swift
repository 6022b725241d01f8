/// What every transport (the synced folder, the relay, later CloudKit) offers the sync engine.
///
/// A transport moves sealed envelopes and sealed attachment blobs of one owner; it never sees
/// keys or plaintext. Every method may be called from any task; a transport serializes its own
/// state. Methods fail only with `TransportFailure`, whose kind tells the engine what to do.
public protocol Transport: AnyObject, Sendable {
    /// The transport's name within its space (`ferryctl transport add NAME ...`).
    var name: String { get }

    /// Stores a batch of envelopes (at most `batchLimit.envelopes` of them and
    /// `batchLimit.bytes` in all). The answer has one outcome per envelope, in order.
    /// Pushing an envelope again (the same owner and event id) answers `.duplicate`. A batch
    /// over the host's size limit throws `.tooLarge`, storing none of it: the engine pushes it
    /// again in smaller batches.
    func push(_ batch: [Envelope]) async throws(TransportFailure) -> [PushOutcome]

    /// The envelopes stored after `cursor` (nil: from the beginning), at most `limit` of them.
    /// When none are there, waits up to `wait` for some to arrive (file-system events, a
    /// long-poll) before answering with an empty page; returns early when the task is cancelled.
    ///
    /// A transport may leave out the envelopes this device sealed (its own pushes, which its
    /// store has), but MUST deliver those its store may not have: ones a copy of this device
    /// pushed that the store never saw, because the store was restored from an older backup
    /// (same machine, same node id). The engine applies every envelope delivered with the merge
    /// rules, own ones included; an own envelope the store has is a duplicate and changes
    /// nothing, so delivering too many costs time, never correctness.
    func pull(after cursor: String?, limit: Int, wait: Duration) async throws(TransportFailure) -> PullPage

    /// Stores a sealed attachment blob read from the file at `path` under `key`. Idempotent.
    /// A blob over the host's size limit throws `.tooLarge`.
    func putBlob(key: BlobKey, from path: String) async throws(TransportFailure)

    /// Whether a blob is stored under `key`.
    func hasBlob(key: BlobKey) async throws(TransportFailure) -> Bool

    /// Writes copy number `copy` (from 0) of the sealed blob stored under `key` to the file at
    /// `path` (replacing it) and returns true, or returns false when there is no such copy (yet).
    /// A host may hold several copies (a folder: one per device that stored it, this device's
    /// first); a caller that finds one damaged asks for the next.
    func getBlob(key: BlobKey, to path: String, copy: Int) async throws(TransportFailure) -> Bool

    /// The blobs with a copy (this device's or another's) whose file changed at or after
    /// `since` (seconds since 1970; nil: all of them), for the engine to check: only a host
    /// whose blobs can vanish (`blobsCanVanish`) has any to give, since a sync tool may cut such
    /// a file short or replace it with a damaged copy without any device knowing.
    func blobsChanged(since: Int64?) async throws(TransportFailure) -> Set<BlobKey>

    /// Writes this device's copy of blob `key` from the file at `path`, replacing its own
    /// damaged one if there is one (a host with one copy of a blob replaces that).
    func replaceBlob(key: BlobKey, from path: String) async throws(TransportFailure)

    /// Removes this device's copy of blob `key` (a host with one copy of a blob removes that
    /// one), for a blob nothing in the space references any longer; a copy that is not there is
    /// removed already. Answers `.inUse` when the host keeps it because a device stored it or
    /// looked for it lately (it may be about to reference it): the engine asks again later, and
    /// by then has pulled any such reference.
    func deleteBlob(key: BlobKey) async throws(TransportFailure) -> BlobDeletion

    /// What the transport can tell about itself (reachable, writable, problems seen).
    func status() async -> TransportStatus

    /// Stops background work (watchers, connections). The transport is not used afterwards.
    func close() async

    /// How many pushes the engine may have on their way at once. More than one only for a
    /// transport whose pushes may be stored in any order (each envelope carries its stamp, and
    /// the merge keeps the greatest), such as the relay; 1 keeps pushes strictly one after
    /// another (the folder numbers its segments in order).
    var pushesInFlight: Int { get }

    /// The most envelopes, and bytes of them, in one push, and the most envelopes the engine
    /// asks for in one pull page (within `SyncLimits.maxBatch`).
    var batchLimit: SyncLimits.Batch { get }

    /// Whether blobs stored here can vanish without the transport knowing (a synced folder,
    /// whose files a user or the sync tool may delete; a relay, where another device removes a
    /// blob nothing references from its view): then the engine checks now and then that the
    /// blobs of the space's attachments it holds are still there, and puts back the ones that
    /// are not. False for a host that loses blobs only with everything else.
    var blobsCanVanish: Bool { get }

    /// How many of the engine's blob-check intervals (`SyncOptions.blobCheckInterval`) apart
    /// the checks of this transport's blobs are: 1 for a host where a check is cheap (a folder:
    /// a stat per file), more for one where it is a request per blob (a relay).
    var blobCheckFactor: Int { get }
}

extension Transport {
    /// The first copy of the blob stored under `key` (`getBlob(key:to:copy:)`).
    public func getBlob(key: BlobKey, to path: String) async throws(TransportFailure) -> Bool {
        try await getBlob(key: key, to: path, copy: 0)
    }
    public func blobsChanged(since: Int64?) async throws(TransportFailure) -> Set<BlobKey> { [] }
    public func replaceBlob(key: BlobKey, from path: String) async throws(TransportFailure) {
        try await putBlob(key: key, from: path)
    }
    public var pushesInFlight: Int { 1 }
    public var blobsCanVanish: Bool { false }
    public var blobCheckFactor: Int { 1 }
    public var batchLimit: SyncLimits.Batch { SyncLimits.standardBatch }
}

/// The engine's batching limits.
public enum SyncLimits {
    /// How many envelopes, and bytes of them, go in one push (and envelopes in one pull page).
    public struct Batch: Sendable, Hashable {
        public var envelopes: Int
        public var bytes: Int
        public init(envelopes: Int, bytes: Int) {
            self.envelopes = envelopes
            self.bytes = bytes
        }
    }
    /// The batch of a transport that names none.
    public static let standardBatch = Batch(envelopes: 400, bytes: 2 << 20)
    /// The largest batch any transport takes.
    public static let maxBatch = Batch(envelopes: 2000, bytes: 8 << 20)
}

/// The address of a sealed attachment blob: a keyed hash of the attachment's SHA-256 under the
/// owner's key, 64 lowercase hex digits, so a host cannot test which file a user holds.
public typealias BlobKey = String

/// What a transport did with a blob the engine asked it to remove.
public enum BlobDeletion: Sendable, Hashable {
    /// Removed, or not there.
    case deleted
    /// Kept: a device stored it or looked for it too recently; ask again after `retryAfter`
    /// when the host said.
    case inUse(retryAfter: Duration?)
}

/// What a transport did with one pushed envelope.
public enum PushOutcome: Sendable, Hashable {
    /// Stored.
    case accepted
    /// It was there already.
    case duplicate
    /// Refused for good (the reason is kept in the outbox and shown by `ferryctl outbox`).
    case rejected(String)
}

/// One page of a pull.
public struct PullPage: Sendable {
    /// Envelopes in the transport's order.
    public var envelopes: [Envelope]
    /// Envelopes the transport found but could not read (corrupt frames); the engine logs them
    /// and goes on.
    public var unreadable: [String]
    /// The cursor after this page, to pass to the next pull and to keep as progress.
    public var cursor: String
    /// More envelopes are there right now: pull again without waiting.
    public var more: Bool

    public init(envelopes: [Envelope], unreadable: [String] = [], cursor: String, more: Bool) {
        self.envelopes = envelopes
        self.unreadable = unreadable
        self.cursor = cursor
        self.more = more
    }
}

/// A transport's failure, by what the engine should do about it.
public enum TransportFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Credentials were refused: stop until the user fixes them.
    case unauthorized(String)
    /// The host's quota is used up: retry slowly.
    case quotaExceeded(String)
    /// The host asked to slow down; retry after the given time when it said one.
    case rateLimited(retryAfter: Duration?, String)
    /// The host or folder cannot be reached right now: retry with backoff.
    case unavailable(String)
    /// The request is wrong and will not succeed if repeated.
    case rejected(String)
    /// The request is over the host's size limit (a push whose body is bigger than the host
    /// takes): the engine pushes the batch again in halves, and records an envelope refused
    /// this way on its own as rejected by the transport. A blob refused this way rejects the
    /// versions that reference it, and the rest of the batch goes on.
    case tooLarge(String)
    /// The host no longer holds what this device sent it or read from it (it was restored
    /// from an older backup, or wiped): the engine starts the transport over, queueing every
    /// record for it again and reading it from its beginning.
    case hostLostData(String)

    /// A short name of the kind: `unauthorized`, `quota`, `rate-limited`, `unavailable`,
    /// `rejected`, `too-large`, `host-lost-data`.
    public var kind: String {
        switch self {
        case .unauthorized: "unauthorized"
        case .quotaExceeded: "quota"
        case .rateLimited: "rate-limited"
        case .unavailable: "unavailable"
        case .rejected: "rejected"
        case .tooLarge: "too-large"
        case .hostLostData: "host-lost-data"
        }
    }

    public var message: String {
        switch self {
        case .unauthorized(let m), .quotaExceeded(let m), .rateLimited(_, let m), .unavailable(let m), .rejected(let m),
             .tooLarge(let m), .hostLostData(let m): m
        }
    }

    public var description: String { "\(kind): \(message)" }
}

/// A transport's own account of itself.
public struct TransportStatus: Sendable, Hashable {
    /// `ok`, or a short problem (`unavailable`, `read-only`, `corrupt-frames`, ...).
    public var state: String
    /// A sentence for the user when something is wrong: what happened and what to do.
    public var message: String?
    /// Extra figures (`segments`, `bytes`, `devices`, ...) shown by `ferryctl status`.
    public var details: [String: String]

    public init(state: String = "ok", message: String? = nil, details: [String: String] = [:]) {
        self.state = state
        self.message = message
        self.details = details
    }
}
