import FerrySQLite
import FerryStore

/// The raw-SQLite yardstick: a table of the same shape as the store's `records` table, with the
/// same unique index, the same pragmas, one prepared statement per operation and nothing else
/// (no change log, no outbox, no validation). What the store does beyond this is its overhead.
final class BaselineDatabase {
    /// One row as the baseline writes and reads it.
    struct Row {
        var entity: String
        var id: String
        var hlc: String
        var deleted: Bool
        var payload: String?
        var attachments: String?
        var seq: Int64
    }

    static let schema = """
        CREATE TABLE records (
            rid         INTEGER PRIMARY KEY,
            sid         INTEGER NOT NULL,
            entity      TEXT NOT NULL,
            id          TEXT NOT NULL,
            hlc         TEXT NOT NULL,
            deleted     INTEGER NOT NULL,
            payload     TEXT,
            attachments TEXT,
            seq         INTEGER NOT NULL
        );
        CREATE UNIQUE INDEX records_by_key ON records (sid, entity, id);
        """

    /// The space id every baseline row has (the store's private space is sid 1 as well).
    static let sid: Int64 = 1

    let db: Database
    private let insertStatement: Statement
    private let getStatement: Statement
    private let pageStatement: Statement

    /// Creates the database at `path` (which must not exist) with the store's pragmas.
    init(path: String, durability: StoreConfiguration.Durability, cacheKiB: Int) throws {
        db = try Database(path: path)
        try db.execute("PRAGMA journal_mode = WAL")
        try db.execute("PRAGMA synchronous = \(durability == .full ? "FULL" : "NORMAL")")
        try db.execute("PRAGMA cache_size = -\(cacheKiB)")
        try db.execute("PRAGMA temp_store = MEMORY")
        try db.execute(BaselineDatabase.schema)
        insertStatement = try db.prepare(
            "INSERT INTO records (sid, entity, id, hlc, deleted, payload, attachments, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
        getStatement = try db.prepare(
            "SELECT entity, id, hlc, deleted, payload, attachments, seq FROM records WHERE sid = ? AND entity = ? AND id = ?")
        pageStatement = try db.prepare("""
            SELECT entity, id, hlc, deleted, payload, attachments, seq FROM records
            WHERE sid = ? AND entity = ? AND id > ? ORDER BY id LIMIT ?
            """)
    }

    /// Records per second for inserting `records` rows like the sync benchmarks' (`bulk`
    /// entity, the given payload) into a fresh baseline database, `batch` rows per transaction,
    /// synchronous=NORMAL.
    static func insertRate(directory: String, records: Int, batch: Int, payload: String) throws -> Double {
        let db = try BaselineDatabase(path: directory + "/raw.db", durability: .normal, cacheKiB: 8192)
        var nanos: UInt64 = 0
        for bi in 0..<max(1, records / batch) {
            let rows = (0..<batch).map { i in
                Row(entity: "bulk", id: String(format: "B%06d-%04d", bi, i), hlc: "2026-11-29T12:00:00.000Z-0000-0000000000000001",
                    deleted: false, payload: payload, attachments: nil, seq: Int64(bi * batch + i + 1))
            }
            let t0 = Monotonic.nanos()
            try db.insert(rows)
            nanos += Monotonic.nanos() - t0
        }
        return Double(max(1, records / batch) * batch) / (Double(nanos) / 1e9)
    }

    /// Inserts `rows` in one transaction (`BEGIN IMMEDIATE`, as the store does).
    func insert(_ rows: [Row]) throws {
        try db.transaction {
            for row in rows {
                insertStatement.bind(1, BaselineDatabase.sid)
                insertStatement.bind(2, row.entity)
                insertStatement.bind(3, row.id)
                insertStatement.bind(4, row.hlc)
                insertStatement.bind(5, row.deleted)
                insertStatement.bind(6, row.payload)
                insertStatement.bind(7, row.attachments)
                insertStatement.bind(8, row.seq)
                try insertStatement.run()
            }
        }
    }

    /// The row with this key, its columns read as the store reads them, or nil.
    func get(entity: String, id: String) throws -> Row? {
        getStatement.bind(1, BaselineDatabase.sid)
        getStatement.bind(2, entity)
        getStatement.bind(3, id)
        defer { getStatement.reset() }
        guard try getStatement.step() else { return nil }
        return BaselineDatabase.row(getStatement)
    }

    /// Up to `limit` rows of `entity` with ids after `after`, in id order.
    func page(entity: String, after: String, limit: Int) throws -> [Row] {
        pageStatement.bind(1, BaselineDatabase.sid)
        pageStatement.bind(2, entity)
        pageStatement.bind(3, after)
        pageStatement.bind(4, limit)
        defer { pageStatement.reset() }
        var rows: [Row] = []
        rows.reserveCapacity(limit)
        while try pageStatement.step() { rows.append(BaselineDatabase.row(pageStatement)) }
        return rows
    }

    private static func row(_ statement: Statement) -> Row {
        Row(entity: statement.text(0) ?? "", id: statement.text(1) ?? "", hlc: statement.text(2) ?? "",
            deleted: statement.bool(3), payload: statement.text(4), attachments: statement.text(5),
            seq: statement.int64(6))
    }
}
