import FerryPostgres
import FerrySync
import Foundation

/// `RelayStorage` on a PostgreSQL database that several relay processes may share.
///
/// Behaves as `SQLiteRelayStorage` does, call for call. Every write is one transaction on a
/// pooled connection; writes to an owner's data first take the owner's row lock
/// (`SELECT ... FOR UPDATE`), so pushes of one owner through any relay run one after the other:
/// sequence numbers come from `owners.next_seq` under that lock and commit in order, and a
/// reader paging by cursor never sees a later number before an earlier one. A push that stores
/// something sends `NOTIFY ferry_relay, '<owner hex>'`, delivered when it commits, which
/// `PostgresWakeListener` in every relay turns into long-poll wake-ups.
public final class PostgresRelayStorage: RelayStorage, Sendable {
    /// The channel pushes notify and relays listen on.
    public static let channel = "ferry_relay"

    let pool: PostgresPool
    /// Where messages say the database is (host, port, database, user; never a password).
    public let target: String

    /// Connects `poolSize` sessions and creates or migrates the schema.
    /// - Parameter timeout: how long a statement may wait for the database before it fails as
    ///   `RelayStorageError.unreachable` (a stalled server or a cut network otherwise holds the
    ///   request until it answers); nil: no limit.
    /// - Throws: `RelayStorageError.database` when connecting or migrating fails.
    public init(conninfo: String, poolSize: Int, timeout: Duration? = nil) throws(RelayStorageError) {
        do {
            pool = try PostgresPool(conninfo: conninfo, size: poolSize, timeout: timeout)
            var name = ""
            try pool.withConnection { db in
                name = db.target
                try PostgresRelaySchema.migrate(db)
            }
            target = name
        } catch {
            throw .database(context: "opening the PostgreSQL database", message: "\(error)")
        }
    }

    /// The server processes of this storage's sessions: notifications they sent are our own.
    public var backendPIDs: Set<Int32> { pool.backendPIDs }

    /// Runs `body` on a pooled connection, in a transaction when `write`, mapping errors. A
    /// transaction that lost a deadlock or serialization race runs again (a few times).
    func run<T>(_ context: String, write: Bool = false, _ body: (PostgresConnection) throws -> T) throws(RelayStorageError) -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try pool.withConnection { db in write ? try db.transaction { try body(db) } : try body(db) }
            } catch let error as RelayStorageError {
                throw error
            } catch let error as PostgresError where error.isRetryable && attempt < 5 {
                continue
            } catch let error as PostgresError where error.isConnectionFailure {
                throw .unreachable(context: context, message: "\(error)")
            } catch {
                throw .database(context: context, message: "\(error)")
            }
        }
    }

    /// Locks the owner's row for the rest of the transaction and reads its counters.
    func lockOwner(_ db: PostgresConnection, _ owner: OwnerID) throws -> (usage: OwnerUsage, nextSeq: Int64) {
        let r = try db.execute("""
            SELECT events, event_bytes, blobs, blob_bytes, quota_bytes, last_push_at, next_seq FROM owners WHERE owner = $1 FOR UPDATE
            """, [.bytes(owner.bytes)])
        guard r.count == 1 else { throw RelayStorageError.unknownOwner(owner) }
        return (usage(r), r.int64(0, 6))
    }

    private func usage(_ r: PostgresResult) -> OwnerUsage {
        OwnerUsage(events: r.int64(0, 0), eventBytes: r.int64(0, 1), blobs: r.int64(0, 2), blobBytes: r.int64(0, 3),
                   quotaOverride: r.optionalInt64(0, 4), lastPushAt: r.optionalInt64(0, 5))
    }

    // MARK: Owners

    public func createOwner(_ owner: OwnerID, quotaBytes: Int64?, now: Int64) throws(RelayStorageError) {
        try run("creating owner") { db in
            _ = try db.execute("INSERT INTO owners(owner, quota_bytes, created_at) VALUES ($1, $2, $3) ON CONFLICT (owner) DO NOTHING",
                           [.bytes(owner.bytes), .optionalInt(quotaBytes), .int(now)])
        }
    }

    public func setQuota(_ owner: OwnerID, quotaBytes: Int64?) throws(RelayStorageError) {
        try run("setting quota") { db in
            let r = try db.execute("UPDATE owners SET quota_bytes = $1 WHERE owner = $2", [.optionalInt(quotaBytes), .bytes(owner.bytes)])
            if r.affectedRows == 0 { throw RelayStorageError.unknownOwner(owner) }
        }
    }

    public func usage(_ owner: OwnerID) throws(RelayStorageError) -> OwnerUsage? {
        try run("reading usage") { db in
            let r = try db.execute("""
                SELECT events, event_bytes, blobs, blob_bytes, quota_bytes, last_push_at FROM owners WHERE owner = $1
                """, [.bytes(owner.bytes)])
            return r.count == 1 ? usage(r) : nil
        }
    }

    public func deleteOwnerData(_ owner: OwnerID) throws(RelayStorageError) -> [String] {
        try run("deleting owner data", write: true) { db in
            let (_, nextSeq) = try lockOwner(db, owner)
            let o = PostgresValue.bytes(owner.bytes)
            let list = try db.execute("SELECT key FROM blobs WHERE owner = $1 ORDER BY key", [o])
            let keys = (0..<list.count).map { list.text($0, 0) ?? "" }
            // Only the bytes of recorded blobs go: an upload between its bytes and its record
            // keeps its bytes, as a blob file would.
            try db.execute("DELETE FROM blob_chunks WHERE owner = $1 AND key IN (SELECT key FROM blobs WHERE owner = $1)", [o])
            try db.execute("DELETE FROM events WHERE owner = $1", [o])
            try db.execute("DELETE FROM blobs WHERE owner = $1", [o])
            try db.execute("UPDATE owners SET events = 0, event_bytes = 0, blobs = 0, blob_bytes = 0, last_push_at = NULL WHERE owner = $1", [o])
            // Every cursor handed out before now points into a copy that is gone: refuse them
            // all (409 lost_data), so a device still syncing here starts over and fills the
            // relay again instead of leaving it with only what is written from now on. Waiting
            // pulls on every relay are woken to be told.
            let offset = try db.execute("SELECT cursor_offset FROM owners WHERE owner = $1", [o]).int64(0, 0)
            guard let moved = Cursor.offsetAfterRestore(offset: offset, nextSeq: nextSeq) else {
                throw RelayStorageError.database(context: "renumbering cursors", message: "the owner's cursor numbers are used up")
            }
            try db.execute("UPDATE owners SET cursor_offset = $1 WHERE owner = $2", [.int(moved), o])
            try db.execute("SELECT pg_notify($1, $2)", [.text(PostgresRelayStorage.channel), .text(owner.description)])
            return keys
        }
    }

    public func totalEvents() throws(RelayStorageError) -> Int64 {
        try run("counting events") { db in
            try db.execute("SELECT COALESCE(SUM(events), 0)::bigint FROM owners").int64(0, 0)
        }
    }
}
