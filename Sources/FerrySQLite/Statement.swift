import CSQLite

/// A prepared statement. Finalized when released. Bind indexes start at 1, column indexes at 0,
/// as in SQLite's C API. Not thread-safe: it belongs to its `Database`'s owner.
public final class Statement: @unchecked Sendable {
    let handle: OpaquePointer
    public let sql: String
    private unowned let database: Database

    init(database: Database, sql: String) throws(SQLiteError) {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(database.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else { throw database.error(rc, sql: sql) }
        self.handle = stmt
        self.sql = sql
        self.database = database
    }

    deinit { sqlite3_finalize(handle) }

    /// Resets the statement and clears its bindings.
    public func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Resets the statement to run again, keeping its bindings.
    public func resetKeepingBindings() {
        sqlite3_reset(handle)
    }

    // MARK: Binding

    public func bind(_ index: Int32, _ value: Int64) {
        sqlite3_bind_int64(handle, index, value)
    }

    public func bind(_ index: Int32, _ value: Int) {
        sqlite3_bind_int64(handle, index, Int64(value))
    }

    public func bind(_ index: Int32, _ value: Bool) {
        sqlite3_bind_int64(handle, index, value ? 1 : 0)
    }

    public func bind(_ index: Int32, _ value: Double) {
        sqlite3_bind_double(handle, index, value)
    }

    /// Binds text; SQLite copies the bytes.
    public func bind(_ index: Int32, _ value: String) {
        var value = value
        value.withUTF8 { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!)
            _ = sqlite3_bind_text(handle, index, base.assumingMemoryBound(to: CChar.self),
                                  Int32(buffer.count), ferry_sqlite_transient())
        }
    }

    public func bind(_ index: Int32, _ value: String?) {
        if let value { bind(index, value) } else { bindNull(index) }
    }

    public func bind(_ index: Int32, _ value: Int64?) {
        if let value { bind(index, value) } else { bindNull(index) }
    }

    /// Binds a blob; SQLite copies the bytes.
    public func bind(_ index: Int32, blob: [UInt8]) {
        blob.withUnsafeBytes { buffer in
            _ = sqlite3_bind_blob(handle, index, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(buffer.count), ferry_sqlite_transient())
        }
    }

    public func bindNull(_ index: Int32) {
        sqlite3_bind_null(handle, index)
    }

    // MARK: Stepping

    /// Advances to the next row. Returns false when done.
    /// - Throws: `SQLiteError` with this statement's SQL on any error.
    @discardableResult
    public func step() throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = database.error(rc, sql: sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Runs a statement that returns no rows, then resets it.
    public func run() throws(SQLiteError) {
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    // MARK: Columns

    public func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_NULL
    }

    public func int64(_ column: Int32) -> Int64 {
        sqlite3_column_int64(handle, column)
    }

    public func int(_ column: Int32) -> Int {
        Int(sqlite3_column_int64(handle, column))
    }

    public func double(_ column: Int32) -> Double {
        sqlite3_column_double(handle, column)
    }

    public func bool(_ column: Int32) -> Bool {
        sqlite3_column_int64(handle, column) != 0
    }

    /// The column as text, or nil when it is NULL.
    public func text(_ column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(handle, column) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        if count == 0 { return "" }
        return String(unsafeUninitializedCapacity: count) { buffer in
            buffer.baseAddress!.initialize(from: pointer, count: count)
            return count
        }
    }

    /// The column's bytes (text or blob), or nil when it is NULL.
    public func bytes(_ column: Int32) -> [UInt8]? {
        if isNull(column) { return nil }
        let pointer = sqlite3_column_blob(handle, column)
        let count = Int(sqlite3_column_bytes(handle, column))
        guard let pointer, count > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
