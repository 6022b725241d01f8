import CSQLite

/// An error reported by SQLite, with the call that failed and the SQL it was running.
public struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The primary SQLite result code (`SQLITE_BUSY`, `SQLITE_CONSTRAINT`, ...).
    public let code: Int32
    /// The extended result code, when SQLite gave one.
    public let extendedCode: Int32
    /// SQLite's own message.
    public let message: String
    /// The SQL being prepared or run, if any.
    public let sql: String?

    public init(code: Int32, extendedCode: Int32? = nil, message: String, sql: String? = nil) {
        self.code = code & 0xFF
        self.extendedCode = extendedCode ?? code
        self.message = message
        self.sql = sql
    }

    /// True for `SQLITE_CONSTRAINT` and its extended codes.
    public var isConstraintViolation: Bool { code == SQLITE_CONSTRAINT }
    /// True when the database file is full or the disk is (`SQLITE_FULL`).
    public var isDiskFull: Bool { code == SQLITE_FULL }

    public var description: String {
        var s = "SQLite error \(extendedCode): \(message)"
        if let sql { s += " (while running: \(sql.prefix(200)))" }
        return s
    }
}
