import Foundation

/// An error reported by libpq or the server, with the call that failed.
///
/// Never carries the connection string (it may hold a password) nor parameter values (tokens,
/// envelope bytes): only the server's message, its SQLSTATE and the first words of the SQL.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    /// What was being done: "connecting to host:port/db", "executing", "LISTEN"...
    public let call: String
    /// The five-character SQLSTATE when the server sent one (`40001`, `23505`...).
    public let sqlState: String?
    /// libpq's or the server's message.
    public let message: String
    /// The SQL being run, if any (statement text only, never its parameters).
    public let sql: String?
    /// The server did not answer within the connection's timeout (stalled, or cut off without
    /// a reset); the session was dropped.
    public let timedOut: Bool

    /// libpq's messages span lines (a tab-indented second line, "connection to server at ...
    /// failed: ..." twice over): they are joined into one, so each error is one log line.
    public init(call: String, sqlState: String? = nil, message: String, sql: String? = nil, timedOut: Bool = false) {
        self.timedOut = timedOut
        self.call = call
        self.sqlState = sqlState
        self.message = message.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: "; ")
        self.sql = sql
    }

    /// A serialization failure or deadlock: the transaction may simply be run again.
    public var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }
    /// A unique or other constraint violation (class 23).
    public var isConstraintViolation: Bool { sqlState?.hasPrefix("23") ?? false }
    /// The connection itself failed (class 08, or no SQLSTATE because the socket broke or the
    /// server did not answer in time).
    public var isConnectionFailure: Bool { sqlState == nil || sqlState!.hasPrefix("08") || sqlState == "57P01" }

    public var description: String {
        var s = "PostgreSQL error"
        if let sqlState { s += " \(sqlState)" }
        s += " while \(call): \(message)"
        if let sql { s += " (running: \(sql.split(whereSeparator: \.isWhitespace).joined(separator: " ").prefix(160)))" }
        return s
    }
}
