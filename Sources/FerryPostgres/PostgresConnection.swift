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

    /// How long a statement may wait for the server before the session is given up as stalled.
    private let timeout: Duration?
    /// Set when a statement timed out: the session is in an unknown state (the server may still
    /// answer it later), so it is not used again until `reset`.
    private var abandoned = false

    /// The connection parameters every session starts from, before the caller's own (which win):
    /// a connection attempt gives up after 10 s, and TCP keepalives find a dead peer (a network
    /// cut, a host gone) within about a minute instead of the kernel's two hours.
    static let defaultParameters: [(String, String)] = [
        ("connect_timeout", "10"), ("keepalives", "1"), ("keepalives_idle", "30"),
        ("keepalives_interval", "10"), ("keepalives_count", "3"),
    ]

    /// Connects with a libpq conninfo string or URI.
    /// - Parameter timeout: how long a statement may go without an answer before it fails
    ///   (`PostgresError.timedOut`) and the session is dropped (nil: no limit). A server that
    ///   stopped answering (stalled, or cut off without a reset) otherwise holds the caller for
    ///   as long as it stays so. Scripts (`executeScript`) have no limit.
    /// - Throws: `PostgresError` naming the server (host, port, database, user; never the password).
    public init(conninfo: String, timeout: Duration? = nil) throws(PostgresError) {
        self.timeout = timeout
        let keywords = Self.defaultParameters.map(\.0) + ["dbname"]
        let values = Self.defaultParameters.map(\.1) + [conninfo]
        let connection = Self.withCStrings(keywords) { k in Self.withCStrings(values) { v in PQconnectdbParams(k, v, 1) } }
        guard let conn = connection else {
            throw PostgresError(call: "connecting", message: "out of memory")
        }
        handle = conn
        guard PQstatus(conn) == CONNECTION_OK else {
            // `deinit` runs for a failed init once `handle` is set: it calls PQfinish.
            throw PostgresError(call: "connecting to \(PostgresConnection.target(conn))", message: PostgresConnection.message(conn))
        }
        try afterConnect()
    }

    /// Calls `body` with a NULL-terminated array of C strings.
    private static func withCStrings<T>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> T) -> T {
        let copies = strings.map { strdup($0) }
        defer { for c in copies { free(c) } }
        let pointers: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) } + [nil]
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
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
        abandoned = false
        // Sending never blocks: `awaitResult` waits for the socket with the statement's deadline.
        guard PQsetnonblocking(handle, 1) == 0 else {
            throw PostgresError(call: "setting up the session with \(target)", message: PostgresConnection.message(handle))
        }
        // Results may be read while the server sends notices; keep them out of stderr.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        try execute("SET client_min_messages = warning")
    }

    /// True while the connection is usable (not broken, and no statement timed out on it).
    public var isHealthy: Bool { !abandoned && PQstatus(handle) == CONNECTION_OK }

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
            return try check(try awaitResult(PQsendQueryParams(handle, sql, 0, nil, nil, nil, nil, 1), sql: sql), sql: sql)
        }
        var name: String?
        if !usePrepared {
            name = nil
        } else if let existing = prepared[sql] {
            name = existing
        } else {
            let fresh = "ferry_\(prepared.count + 1)"
            let types = parameters.map(\.typeOID)
            _ = try check(try awaitResult(PQsendPrepare(handle, fresh, sql, Int32(types.count), types), sql: sql), sql: sql)
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
        let sent = pointers.withUnsafeMutableBufferPointer { values in
            values.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: values.count) { v in
                if let name {
                    PQsendQueryPrepared(handle, name, Int32(buffers.count), v, lengths, formats, 1)
                } else {
                    PQsendQueryParams(handle, sql, Int32(buffers.count), types, v, lengths, formats, 1)
                }
            }
        }
        return try check(try awaitResult(sent, sql: sql), sql: sql)
    }

    /// Waits for the answer to the statement just sent (`sent` is the PQsend* call's return):
    /// flushes it, then reads until the server has answered it whole.
    /// - Returns: the first failed result, else the last one (what `PQexec` would return);
    ///   nil when libpq had none (the connection broke), which `check` reports.
    /// - Throws: `PostgresError` when sending failed, or `timedOut` when the server did not
    ///   answer within the timeout (or `deadline` for scripts); the session is then abandoned.
    private func awaitResult(_ sent: Int32, sql: String, limited: Bool = true) throws(PostgresError) -> OpaquePointer? {
        guard sent == 1 else {
            throw PostgresError(call: "sending a statement to \(target)", message: PostgresConnection.message(handle), sql: sql)
        }
        let deadline = limited ? timeout.map { Self.monotonicNanos() + Self.nanos($0) } : nil
        // Send what libpq still holds.
        while true {
            let flushed = PQflush(handle)
            if flushed == 0 { break }
            if flushed < 0 {
                throw PostgresError(call: "sending a statement to \(target)", message: PostgresConnection.message(handle), sql: sql)
            }
            if try waitForSocket(events: Int16(POLLIN | POLLOUT), deadline: deadline, sql: sql) & Int16(POLLIN) != 0 {
                try consume(sql: sql)
            }
        }
        var chosen: OpaquePointer?
        while true {
            while PQisBusy(handle) == 1 {
                _ = try waitForSocket(events: Int16(POLLIN), deadline: deadline, sql: sql)
                try consume(sql: sql)
            }
            guard let result = PQgetResult(handle) else { break }
            if let kept = chosen, !Self.succeeded(kept) {
                PQclear(result)
            } else {
                if let kept = chosen { PQclear(kept) }
                chosen = result
            }
        }
        return chosen
    }

    private static func succeeded(_ result: OpaquePointer) -> Bool {
        PQresultStatus(result) == PGRES_COMMAND_OK || PQresultStatus(result) == PGRES_TUPLES_OK
    }

    private func consume(sql: String) throws(PostgresError) {
        guard PQconsumeInput(handle) == 1 else {
            throw PostgresError(call: "reading the answer from \(target)", message: PostgresConnection.message(handle), sql: sql)
        }
    }

    /// Waits until the socket is ready for `events` or `deadline` (monotonic nanoseconds) passes.
    /// - Returns: the events that are ready.
    /// - Throws: `timedOut` (the session is abandoned) or a `poll()` failure.
    private func waitForSocket(events: Int16, deadline: UInt64?, sql: String) throws(PostgresError) -> Int16 {
        let fd = PQsocket(handle)
        guard fd >= 0 else { throw PostgresError(call: "waiting for \(target)", message: "the connection is closed", sql: sql) }
        while true {
            var wait: Int32 = -1
            if let deadline {
                let now = Self.monotonicNanos()
                if now >= deadline {
                    abandoned = true
                    throw PostgresError(call: "waiting for \(target)", message: "no answer within \(timeout ?? .zero); the session is dropped",
                                        sql: sql, timedOut: true)
                }
                wait = Int32(min((deadline - now + 999_999) / 1_000_000, 1_000))
            }
            var p = pollfd(fd: fd, events: events, revents: 0)
            let n = poll(&p, 1, wait)
            if n < 0 {
                if errno == EINTR { continue }
                throw PostgresError(call: "poll() on the connection to \(target)", message: String(cString: strerror(errno)), sql: sql)
            }
            if n > 0 { return p.revents }
        }
    }

    private static func monotonicNanos() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    private static func nanos(_ d: Duration) -> UInt64 {
        let c = d.components
        return UInt64(max(0, c.seconds)) * 1_000_000_000 + UInt64(max(0, c.attoseconds) / 1_000_000_000)
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
        _ = try check(try awaitResult(PQsendQuery(handle, sql), sql: sql, limited: false), sql: sql)
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
