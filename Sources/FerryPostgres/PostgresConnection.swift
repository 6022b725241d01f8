import CPostgres
import Foundation

/// One libpq connection.
///
/// Not thread-safe: one owner at a time (a `PostgresPool` hands it out, or a `PostgresListener`
/// keeps it). `@unchecked Sendable` so the pool can move it between threads; the pool, not this
/// type, guarantees exclusive use.
public final class PostgresConnection: @unchecked Sendable {
    let handle: OpaquePointer
    /// Server-side prepared statements by SQL text; they die with the session, so a reset clears them.
    private var prepared: [String: String] = [:]

    /// Connects with a libpq conninfo string or URI.
    /// - Throws: `PostgresError` naming the server (host, port, database, user; never the password).
    public init(conninfo: String) throws(PostgresError) {
        guard let conn = PQconnectdb(conninfo) else {
            throw PostgresError(call: "connecting", message: "out of memory")
        }
        handle = conn
        guard PQstatus(conn) == CONNECTION_OK else {
            // `deinit` runs for a failed init once `handle` is set: it calls PQfinish.
            throw PostgresError(call: "connecting to \(PostgresConnection.target(conn))", message: PostgresConnection.message(conn))
        }
        try afterConnect()
    }

    deinit { PQfinish(handle) }

    /// Checks that `conninfo` parses (keywords and quoting), without connecting.
    /// - Returns: libpq's complaint, or nil when it parses.
    public static func validate(conninfo: String) -> String? {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(conninfo, &error) else {
            let message = error.map { String(cString: $0) } ?? "cannot parse the connection string"
            if let error { PQfreemem(error) }
            return message.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        PQconninfoFree(options)
        return nil
    }

    /// "host:port/dbname as user", for messages (no password).
    public var target: String { PostgresConnection.target(handle) }

    static func target(_ conn: OpaquePointer) -> String {
        func s(_ p: UnsafeMutablePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "?" }
        return "\(s(PQhost(conn))):\(s(PQport(conn)))/\(s(PQdb(conn))) as \(s(PQuser(conn)))"
    }

    static func message(_ conn: OpaquePointer) -> String {
        String(cString: PQerrorMessage(conn)).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func afterConnect() throws(PostgresError) {
        prepared.removeAll()
        // Results may be read while the server sends notices; keep them out of stderr.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        try execute("SET client_min_messages = warning")
    }

    /// True while the connection is usable.
    public var isHealthy: Bool { PQstatus(handle) == CONNECTION_OK }

    /// Reconnects with the same parameters (after the server or network dropped the session).
    public func reset() throws(PostgresError) {
        PQreset(handle)
        guard PQstatus(handle) == CONNECTION_OK else {
            throw PostgresError(call: "reconnecting to \(target)", message: PostgresConnection.message(handle))
        }
        try afterConnect()
    }

    /// The server process serving this session (notifications carry the sender's).
    public var backendPID: Int32 { PQbackendPID(handle) }

    /// The socket, for `poll()` by a listener.
    public var socket: Int32 { PQsocket(handle) }

    /// Runs one statement. With parameters (sent binary and typed), it is prepared once per
    /// session and reused; results come back in binary form.
    /// - Throws: `PostgresError` with the server's SQLSTATE and message.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresResult {
        try execute(sql, parameters, prepared: true)
    }

    /// `execute`, planned for these very parameters each time (`prepared: false`): for a
    /// statement whose best plan depends on them or on how large the tables have grown since
    /// (a lookup of many keys at once), where a plan kept from a first run on a small table
    /// would stay a sequential scan.
    public func execute(_ sql: String, _ parameters: [PostgresValue], prepared usePrepared: Bool) throws(PostgresError) -> PostgresResult {
        if parameters.isEmpty {
            return try check(PQexecParams(handle, sql, 0, nil, nil, nil, nil, 1), sql: sql)
        }
        var name: String?
        if !usePrepared {
            name = nil
        } else if let existing = prepared[sql] {
            name = existing
        } else {
            let fresh = "ferry_\(prepared.count + 1)"
            let types = parameters.map(\.typeOID)
            _ = try check(PQprepare(handle, fresh, sql, Int32(types.count), types), sql: sql)
            prepared[sql] = fresh
            name = fresh
        }
        let buffers = parameters.map(\.binary)
        var pointers: [UnsafeMutablePointer<CChar>?] = buffers.map { b in
            guard let b else { return nil }
            let p = UnsafeMutablePointer<CChar>.allocate(capacity: max(b.count, 1))
            b.withUnsafeBytes { raw in
                if let base = raw.baseAddress { UnsafeMutableRawPointer(p).copyMemory(from: base, byteCount: b.count) }
            }
            return p
        }
        defer { for p in pointers { p?.deallocate() } }
        let lengths = buffers.map { Int32($0?.count ?? 0) }
        let formats = [Int32](repeating: 1, count: buffers.count)
        let types = parameters.map(\.typeOID)
        let result = pointers.withUnsafeMutableBufferPointer { values in
            values.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: values.count) { v in
                if let name {
                    PQexecPrepared(handle, name, Int32(buffers.count), v, lengths, formats, 1)
                } else {
                    PQexecParams(handle, sql, Int32(buffers.count), types, v, lengths, formats, 1)
                }
            }
        }
        return try check(result, sql: sql)
    }

    private func check(_ result: OpaquePointer?, sql: String) throws(PostgresError) -> PostgresResult {
        guard let result else {
            throw PostgresError(call: "executing", message: PostgresConnection.message(handle), sql: sql)
        }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let state = PQresultErrorField(result, 0x43 /* PG_DIAG_SQLSTATE */).map { String(cString: $0) }
            let message = String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQclear(result)
            throw PostgresError(call: "executing", sqlState: state, message: message.isEmpty ? PostgresConnection.message(handle) : message, sql: sql)
        }
        return PostgresResult(handle: result)
    }

    /// Runs a script of one or more statements without parameters or rows (schema changes).
    public func executeScript(_ sql: String) throws(PostgresError) {
        _ = try check(PQexec(handle, sql), sql: sql)
    }

    /// Runs `body` in a transaction: COMMIT when it returns, ROLLBACK when it throws.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            if isHealthy { _ = try? execute("ROLLBACK") }
            throw error
        }
    }

    /// Reads what the server sent (for a listener after `poll()` said the socket is readable).
    /// - Throws: `PostgresError` when the connection broke.
    public func consumeInput() throws(PostgresError) {
        guard PQconsumeInput(handle) == 1 else {
            throw PostgresError(call: "reading notifications from \(target)", message: PostgresConnection.message(handle))
        }
    }

    /// The notifications received so far, oldest first.
    public func notifications() -> [PostgresNotification] {
        var out: [PostgresNotification] = []
        while let n = PQnotifies(handle) {
            out.append(PostgresNotification(channel: String(cString: n.pointee.relname),
                                            payload: String(cString: n.pointee.extra),
                                            senderPID: n.pointee.be_pid))
            PQfreemem(n)
        }
        return out
    }
}

/// One `NOTIFY` received on a listening connection.
public struct PostgresNotification: Sendable, Equatable {
    public var channel: String
    public var payload: String
    /// The server process of the session that sent it.
    public var senderPID: Int32
}
