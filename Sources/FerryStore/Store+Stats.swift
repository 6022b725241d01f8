import FerryCrypto
import FerryModel
import FerrySQLite

extension Store {
    static let recordCountSQL = "SELECT count(*) FROM records"
    static let tombstoneCountSQL = "SELECT count(*) FROM records WHERE deleted = 1"

    /// Store-wide counts (for status displays), all of one moment (one read transaction).
    public func stats() throws(FerryError) -> StoreStats {
        try read("counting", slow: true) { db in
            func count(_ sql: String) throws -> Int64 { try db.scalarInt(sql) ?? 0 }
            try db.execute("BEGIN")
            defer { if (try? db.execute("COMMIT")) == nil { try? db.execute("ROLLBACK") } }
            let counts = try Self.outboxCounts(in: db, limit: .max)
            // All records from the smallest index, tombstones from theirs: no record is read.
            let tombstones = try count(Self.tombstoneCountSQL)
            return StoreStats(
                records: Int(try count(Self.recordCountSQL) - tombstones),
                tombstones: Int(tombstones),
                outbox: counts.pending + counts.withoutTransport,
                outboxWithoutTransport: counts.withoutTransport,
                outboxErrors: Int(try count("SELECT count(DISTINCT rid) FROM outbox_delivery WHERE error IS NOT NULL")),
                lastSeq: try count("SELECT max(seq) FROM changes"),
                attachments: Int(try count("SELECT count(*) FROM attachments WHERE present = 1")),
                attachmentBytes: try count("SELECT total(size) FROM attachments WHERE present = 1"),
                // Only those a current version references: a losing version's blob may be gone
                // from the transports for good (they keep blobs current versions reference).
                attachmentsMissing: Int(try count("""
                    SELECT count(*) FROM attachments a INDEXED BY attachments_missing WHERE a.present = 0 AND a.refs > 0
                      AND EXISTS (SELECT 1 FROM attachment_refs s WHERE s.sha256 = a.sha256 AND s.current > 0)
                    """)))
        }
    }

    /// The outbox's counts alone, cheap enough for a status line however large the store or
    /// the backlog: change-log rows by seq (never a check of each), and each count stops past
    /// `limit` (about 6 ms for 100,000; a count of a million took 45).
    public func outboxCounts(limit: Int = OutboxCounts.defaultLimit) throws(FerryError) -> OutboxCounts {
        try read("counting the outbox", slow: true) { db in try Self.outboxCounts(in: db, limit: max(0, limit)) }
    }

    /// `pending`: per space with transports, the changes after its slowest transport's cursor,
    /// less those every transport took ahead of its cursor. That is what that transport needs,
    /// plus, for moments, changes it will skip (ones it delivered itself, read past by its next
    /// push). `withoutTransport`: every change of the
    /// spaces with no transport. Each stops at `limit + 1` (`.max`: exact).
    private static func outboxCounts(in db: Database, limit: Int) throws -> OutboxCounts {
        // Rows still to count before a count is past the limit (-1: no LIMIT).
        func room(_ counted: Int64) -> Int64 { limit == .max ? -1 : Int64(limit) + 1 - counted }
        var lowest: [Int64: Int64] = [:]
        let cursors = try db.cached("SELECT s.sid, min(t.sent) FROM spaces s LEFT JOIN transports t ON t.sid = s.sid GROUP BY s.sid")
        defer { cursors.reset() }
        var bare: [Int64] = []
        while try cursors.step() {
            if cursors.isNull(1) { bare.append(cursors.int64(0)) } else { lowest[cursors.int64(0)] = cursors.int64(1) }
        }
        let after = try db.cached("SELECT count(*) FROM (SELECT 1 FROM changes WHERE seq > ? AND sid = ? LIMIT ?)")
        defer { after.reset() }
        var pending: Int64 = 0, orphaned: Int64 = 0
        for (sid, low) in lowest where room(pending) != 0 {
            after.reset()
            after.bind(1, low); after.bind(2, sid); after.bind(3, room(pending))
            if try after.step() { pending += after.int64(0) }
        }
        // Versions every transport has although past a cursor: taken ahead of a backlog
        // (`recordAhead`). Rare, and only subtracted from an exact count.
        if room(pending) != 0, try db.scalarInt("SELECT EXISTS (SELECT 1 FROM outbox_delivery WHERE error IS NULL)") == 1 {
            let ahead = try db.cached("""
                SELECT count(*) FROM records r
                WHERE r.rid IN (SELECT rid FROM outbox_delivery WHERE error IS NULL) AND r.sid = ?1 AND r.seq > ?2
                  AND NOT EXISTS (SELECT 1 FROM transports t WHERE t.sid = r.sid AND t.sent < r.seq
                                  AND NOT EXISTS (SELECT 1 FROM outbox_delivery d
                                                  WHERE d.rid = r.rid AND d.transport = t.name AND d.acked_hlc >= r.hlc))
                """)
            defer { ahead.reset() }
            for (sid, low) in lowest {
                ahead.reset()
                ahead.bind(1, sid); ahead.bind(2, low)
                if try ahead.step() { pending -= ahead.int64(0) }
            }
        }
        // One change-log row per record: a space's records, counted on its key index.
        let records = try db.cached("SELECT count(*) FROM (SELECT 1 FROM records WHERE sid = ? LIMIT ?)")
        defer { records.reset() }
        for sid in bare where room(orphaned) != 0 {
            records.reset()
            records.bind(1, sid); records.bind(2, room(orphaned))
            if try records.step() { orphaned += records.int64(0) }
        }
        return OutboxCounts(pending: Int(pending), withoutTransport: Int(orphaned), limit: limit)
    }

    /// A SHA-256 over every record of the given spaces (all when nil), in key order: equal on two
    /// devices exactly when they hold the same versions.
    public func digest(spaces: Set<String>? = nil) throws(FerryError) -> String {
        try read("computing the digest", slow: true) { db in
            var hasher = SHA256()
            let statement = try db.prepare("""
                SELECT s.name, r.entity, r.id, r.hlc, r.deleted, r.payload, r.attachments
                FROM records r JOIN spaces s ON s.sid = r.sid ORDER BY s.name, r.entity, r.id
                """)
            while try statement.step() {
                let name = statement.text(0) ?? ""
                if let spaces, !spaces.contains(name) { continue }
                var line = ""
                for c in Int32(0)..<7 { line += (statement.text(c) ?? "\u{1}") + "\u{0}" }
                hasher.update(Array(line.utf8))
            }
            return Hex.encode(hasher.finalize())
        }
    }

    /// A stored setting (engine state key `setting:<name>`).
    public func setting(_ name: String) throws(FerryError) -> String? {
        try read("reading setting \(name)") { db in
            let statement = try db.cached("SELECT value FROM engine_state WHERE key = ?")
            defer { statement.reset() }
            statement.bind(1, "setting:" + name)
            return try statement.step() ? statement.text(0) : nil
        }
    }

    /// Stores a setting (nil removes it).
    public func setSetting(_ name: String, _ value: String?) throws(FerryError) {
        try write("saving setting \(name)") { writer in
            let statement = try writer.db.prepare(value == nil
                ? "DELETE FROM engine_state WHERE key = ?1"
                : "INSERT OR REPLACE INTO engine_state (key, value) VALUES (?1, ?2)")
            statement.bind(1, "setting:" + name)
            if let value { statement.bind(2, value) }
            try statement.run()
        }
    }
}
