import FerrySQLite
import FerrySync
import Foundation

/// `RelayStorage` on one SQLite file (WAL, so `ferry-relay admin` can write while `serve` runs).
///
/// `@unchecked Sendable`: the one connection is used only while holding `lock`, so calls from
/// the server's threads are serialized; that lock is the owner of the database state.
/// A batch is one `BEGIN IMMEDIATE` transaction: a crash leaves all of it or none.
public final class SQLiteRelayStorage: RelayStorage, @unchecked Sendable {
    let lock = NSLock()
    let db: Database
    /// Concurrent pushes commit together (see `PushGroup`).
    let pushGroup = PushGroup()
    /// Checkpoints the WAL on a thread of its own, so that no push pays for one.
    let checkpointer: Checkpointer
    /// Nudges the checkpointer as the log grows, and keeps the log bounded under a steady
    /// stream of pushes.
    let logWatch: LogWatch
    public let path: String

    /// Opens (creating and migrating) the database at `path`.
    /// - Parameters:
    ///   - synchronous: `FULL` survives power loss, `NORMAL` a crash of the process.
    ///   - maxLogBytes: past this, the write-ahead log is started over after a commit (`LogWatch`).
    ///   - cacheMiB: SQLite's page cache. Pushes insert into indexes keyed by random ids (the
    ///     event and the stream), so with too small a cache each push reads pages back and
    ///     writes dirty ones out before its commit.
    /// - Throws: `RelayStorageError.database` when it cannot be opened or migrated.
    public init(path: String, synchronous: String = "FULL", maxLogBytes: Int = LogWatch.defaultMaxBytes,
                cacheMiB: Int = 64) throws(RelayStorageError) {
        self.path = path
        do {
            db = try Database(path: path, coalesceLogWrites: true)
            try RelaySchema.migrate(db)
            try db.execute("PRAGMA synchronous=\(synchronous == "NORMAL" ? "NORMAL" : "FULL"); PRAGMA foreign_keys=ON; PRAGMA cache_size=-\(max(2, cacheMiB) * 1024)")
            // Each push runs in a savepoint (`commitGroup`), whose undo copy of every page it
            // changes SQLite keeps in a temporary file by default, a write system call for each.
            // In memory it is bounded by the pages of one push.
            try db.execute("PRAGMA temp_store=MEMORY")
            // Commits sync the WAL only; the checkpointer copies it back off the push path.
            checkpointer = try Checkpointer(path: path) { try $0.execute("PRAGMA busy_timeout=5000") }
            logWatch = try LogWatch(db: db, checkpointer: checkpointer, maxBytes: maxLogBytes)
        } catch {
            throw .database(context: "opening \(path)", message: "\(error)")
        }
    }

    deinit { checkpointer.stop() }

    /// Copies the write-ahead log into the database file and empties the log, at shutdown once
    /// no request runs: the process exits without closing its connections, so SQLite's own
    /// last checkpoint never runs, and the file alone (a backup of a stopped relay's directory
    /// taken without its `-wal`) would lack every push since the last checkpoint. Returns
    /// whether the log was emptied.
    @discardableResult
    public func close() -> Bool { checkpointer.stop(truncating: true) }

    /// Runs `body` holding the lock, in a transaction when `write`, mapping SQLite's errors.
    func locked<T>(_ context: String, write: Bool = false, _ body: () throws -> T) throws(RelayStorageError) -> T {
        lock.lock(); defer { lock.unlock() }
        do {
            guard write else { return try body() }
            let result = try db.transaction { try body() }
            logWatch.afterCommit()
            return result
        } catch let error as RelayStorageError {
            throw error
        } catch {
            throw .database(context: context, message: "\(error)")
        }
    }

    // MARK: Owners

    public func createOwner(_ owner: OwnerID, quotaBytes: Int64?, now: Int64) throws(RelayStorageError) {
        try locked("creating owner", write: true) {
            // `oid`: the owner's key in `events`, one above the largest yet (never reused).
            let s = try db.cached("""
                INSERT INTO owners(owner, quota_bytes, created_at, oid)
                VALUES (?, ?, ?, (SELECT coalesce(max(oid), 0) + 1 FROM owners)) ON CONFLICT(owner) DO NOTHING
                """)
            s.bind(1, blob: owner.bytes); s.bind(2, quotaBytes); s.bind(3, now)
            try s.run()
        }
    }

    public func setQuota(_ owner: OwnerID, quotaBytes: Int64?) throws(RelayStorageError) {
        try locked("setting quota", write: true) {
            let s = try db.cached("UPDATE owners SET quota_bytes = ? WHERE owner = ?")
            s.bind(1, quotaBytes); s.bind(2, blob: owner.bytes)
            try s.run()
            if db.changes == 0 { throw RelayStorageError.unknownOwner(owner) }
        }
    }

    public func usage(_ owner: OwnerID) throws(RelayStorageError) -> OwnerUsage? {
        try locked("reading usage") { try usageUnlocked(owner) }
    }

    func usageUnlocked(_ owner: OwnerID) throws -> OwnerUsage? {
        let s = try db.cached("SELECT events, event_bytes, blobs, blob_bytes, quota_bytes, last_push_at FROM owners WHERE owner = ?")
        s.bind(1, blob: owner.bytes)
        defer { s.resetKeepingBindings() }
        guard try s.step() else { return nil }
        return OwnerUsage(events: s.int64(0), eventBytes: s.int64(1), blobs: s.int64(2), blobBytes: s.int64(3),
                          quotaOverride: s.isNull(4) ? nil : s.int64(4), lastPushAt: s.isNull(5) ? nil : s.int64(5))
    }

    public func deleteOwnerData(_ owner: OwnerID) throws(RelayStorageError) -> [String] {
        try locked("deleting owner data", write: true) {
            guard try usageUnlocked(owner) != nil else { throw RelayStorageError.unknownOwner(owner) }
            var keys: [String] = []
            let list = try db.cached("SELECT key FROM blobs WHERE owner = ?")
            list.bind(1, blob: owner.bytes)
            while try list.step() { keys.append(list.text(0) ?? "") }
            list.resetKeepingBindings()
            for sql in ["DELETE FROM events WHERE oid = (SELECT oid FROM owners WHERE owner = ?)", "DELETE FROM blobs WHERE owner = ?",
                        "UPDATE owners SET events = 0, event_bytes = 0, blobs = 0, blob_bytes = 0, last_push_at = NULL WHERE owner = ?"] {
                let s = try db.cached(text: sql)
                s.bind(1, blob: owner.bytes)
                try s.run()
            }
            // Every cursor handed out before now points into a copy that is gone: refuse them
            // all (409 lost_data), so a device still syncing here starts over and fills the
            // relay again instead of leaving it with only what is written from now on.
            let head = try db.cached("SELECT next_seq, cursor_offset FROM owners WHERE owner = ?")
            head.bind(1, blob: owner.bytes)
            guard try head.step() else { throw RelayStorageError.unknownOwner(owner) }
            let (nextSeq, offset) = (head.int64(0), head.int64(1))
            head.resetKeepingBindings()
            guard let moved = Cursor.offsetAfterRestore(offset: offset, nextSeq: nextSeq) else {
                throw RelayStorageError.database(context: "renumbering cursors", message: "the owner's cursor numbers are used up")
            }
            let u = try db.cached("UPDATE owners SET cursor_offset = ? WHERE owner = ?")
            u.bind(1, moved); u.bind(2, blob: owner.bytes)
            try u.run()
            return keys
        }
    }

    public func totalEvents() throws(RelayStorageError) -> Int64 {
        try locked("counting events") { try db.scalarInt("SELECT COALESCE(SUM(events), 0) FROM owners") ?? 0 }
    }
}
