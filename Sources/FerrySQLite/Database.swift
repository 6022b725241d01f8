import CSQLite
import Foundation

/// One SQLite connection.
///
/// A `Database` is not thread-safe: its owner (one serial executor, see `Store`) must be the only
/// caller. It is `@unchecked Sendable` so that an owner can move it to the thread it runs on; the
/// owner, not this type, guarantees exclusive use.
public final class Database: @unchecked Sendable {
    /// How the file is opened.
    public enum Mode: Sendable { case readWrite, readOnly }

    public let path: String
    let handle: OpaquePointer
    private var statementCache: [String: Statement] = [:]
    /// The statements of SQL given as literals, by the literal's address: a lookup hashes one
    /// pointer, not the text (which costs more than some of the statements it finds).
    private var literalCache: [UnsafeRawPointer: Statement] = [:]
    /// The handler `onWALCommit` installed, kept alive here while SQLite holds a pointer to it.
    private var walHook: WALHook?

    private final class WALHook {
        let handler: (Int) -> Void
        init(_ handler: @escaping (Int) -> Void) { self.handler = handler }
    }

    /// Library-wide settings, made once before the first connection opens: SQLite's memory
    /// statistics (which no one reads here) are off, so an allocation takes no global mutex.
    private static let processSetup: Void = {
        _ = ferry_sqlite_disable_memory_statistics()
    }()

    /// Opens (and for `.readWrite`, creates) the database at `path`. The file, and the
    /// write-ahead log and shared-memory files SQLite makes beside it (which take the file's
    /// mode), are readable by this user only: a database holds keys and tokens, whatever the
    /// umask and the mode of the directory it is in (one made beforehand is often 0755).
    /// Files made with a wider mode (by an older version, or just now by SQLite, empty) are
    /// narrowed when opened for writing.
    ///
    /// `coalesceLogWrites`: this connection writes each transaction's write-ahead-log frames in
    /// one system call (`CoalescingVFS`); for the connection that writes the most.
    ///
    /// `processExclusive`: only this process may use the file while it has it open (SQLite's
    /// `unix-excl` VFS). The first access takes a lock that keeps every other process out (they
    /// get SQLITE_BUSY, "database is locked"), and this process's connections share the
    /// write-ahead log's index in memory instead of in the `-shm` file, so a transaction takes
    /// no file locks (six `fcntl` calls fewer per write transaction, measured 6 µs per commit).
    /// Every connection this process opens to the file must say so, and open it for writing
    /// (a plain or read-only one would drop the process's lock when it unlocks).
    /// - Throws: `SQLiteError` when the file cannot be opened.
    public init(path: String, mode: Mode = .readWrite, coalesceLogWrites: Bool = false,
                processExclusive: Bool = false) throws(SQLiteError) {
        precondition(!processExclusive || mode == .readWrite, "a process-exclusive connection is opened for writing")
        _ = Database.processSetup
        self.path = path
        var db: OpaquePointer?
        let flags: Int32 = (mode == .readWrite ? (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) : SQLITE_OPEN_READONLY)
            | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let exclusive = processExclusive && CoalescingVFS.exclusiveName != nil
        let vfs = coalesceLogWrites ? (exclusive ? CoalescingVFS.exclusiveName : CoalescingVFS.name) : (exclusive ? "unix-excl" : nil)
        let rc = sqlite3_open_v2(path, &db, flags, vfs)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: rc, message: "cannot open \(path): \(message)")
        }
        handle = db
        sqlite3_busy_timeout(db, 5000)
        if mode == .readWrite && path != ":memory:" && !path.isEmpty && !path.hasPrefix("file:") { Database.keepPrivate(path) }
    }

    /// Takes group and other permissions off `path` (which SQLite has just opened, creating it
    /// if it was missing) and its `-wal` and `-shm` files; SQLite makes those with the mode of
    /// the database file, so they are private from then on. Only `chmod`: opening and closing
    /// the file here would drop the POSIX locks this process holds on it through its other
    /// connections, and another process could then take itself for the last one and delete
    /// the write-ahead log under them. Best effort: another user's file is left alone.
    private static func keepPrivate(_ path: String) {
        for file in [path, path + "-wal", path + "-shm"] {
            var st = stat()
            if stat(file, &st) == 0, st.st_mode & 0o077 != 0, st.st_uid == geteuid() {
                _ = chmod(file, st.st_mode & 0o700)
            }
        }
    }

    deinit {
        if walHook != nil { sqlite3_wal_hook(handle, nil, nil) }
        statementCache.removeAll()
        literalCache.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that return no rows (schema, pragmas).
    public func execute(_ sql: String) throws(SQLiteError) {
        var errmsg: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errmsg)
        if rc != SQLITE_OK {
            let message = errmsg.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(errmsg)
            throw SQLiteError(code: rc, extendedCode: sqlite3_extended_errcode(handle), message: message, sql: sql)
        }
    }

    /// Prepares a statement that the caller owns and that is finalized when released.
    public func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        try Statement(database: self, sql: sql)
    }

    /// Returns a prepared statement kept for the life of the connection, reset. Its previous
    /// bindings stay: the caller must bind every parameter. Use it for the statements run on
    /// hot paths.
    public func cached(_ sql: StaticString) throws(SQLiteError) -> Statement {
        guard sql.hasPointerRepresentation else { return try cached(text: sql.description) }
        let key = UnsafeRawPointer(sql.utf8Start)
        if let statement = literalCache[key] {
            statement.resetKeepingBindings()
            return statement
        }
        let statement = try Statement(database: self, sql: sql.description)
        literalCache[key] = statement
        return statement
    }

    /// `cached` for SQL built at run time: kept by its text.
    public func cached(text sql: String) throws(SQLiteError) -> Statement {
        if let statement = statementCache[sql] {
            // Callers bind every parameter on each use, so the old bindings need no clearing.
            statement.resetKeepingBindings()
            return statement
        }
        let statement = try Statement(database: self, sql: sql)
        statementCache[sql] = statement
        return statement
    }

    /// Calls `handler` after every commit of this connection in WAL mode, on the committing
    /// thread, with the number of pages (frames) the write-ahead log now holds. It replaces
    /// SQLite's automatic checkpoints (`wal_autocheckpoint`), which use the same hook; nil
    /// removes it.
    public func onWALCommit(_ handler: ((Int) -> Void)?) {
        guard let handler else {
            sqlite3_wal_hook(handle, nil, nil)
            walHook = nil
            return
        }
        let hook = WALHook(handler)
        walHook = hook
        sqlite3_wal_hook(handle, { context, _, _, pages in
            guard let context else { return SQLITE_OK }
            Unmanaged<WALHook>.fromOpaque(context).takeUnretainedValue().handler(Int(pages))
            return SQLITE_OK
        }, Unmanaged.passUnretained(hook).toOpaque())
    }

    /// How many writes this connection's write-ahead log made to its file, when the connection
    /// coalesces them (`CoalescingVFS`) and has opened its log; nil otherwise. For tests.
    public var coalescedLogWrites: Int? {
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(handle, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file) == SQLITE_OK, let file else { return nil }
        return CoalescingVFS.logWrites(file)
    }

    /// The rowid of the last inserted row on this connection.
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the last statement.
    public var changes: Int { Int(sqlite3_changes(handle)) }

    /// True while a transaction is open.
    public var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Reads a pragma or any single-value query as an integer.
    public func scalarInt(_ sql: String) throws(SQLiteError) -> Int64? {
        let statement = try prepare(sql)
        guard try statement.step() else { return nil }
        return statement.isNull(0) ? nil : statement.int64(0)
    }

    /// Reads a single-value query as text.
    public func scalarText(_ sql: String) throws(SQLiteError) -> String? {
        let statement = try prepare(sql)
        guard try statement.step() else { return nil }
        return statement.text(0)
    }

    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws.
    public func transaction<T>(_ kind: String = "IMMEDIATE", _ body: () throws -> T) throws -> T {
        try execute("BEGIN \(kind)")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    func error(_ rc: Int32, sql: String?) -> SQLiteError {
        SQLiteError(code: rc, extendedCode: sqlite3_extended_errcode(handle),
                    message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }
}
