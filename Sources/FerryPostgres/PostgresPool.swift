import Foundation

/// A fixed set of connections to one database, handed out one caller at a time.
///
/// `@unchecked Sendable`: `idle` and `pids` are guarded by `condition`; a connection is used only
/// by the caller that checked it out, so each has exactly one owner at any moment.
public final class PostgresPool: @unchecked Sendable {
    private let condition = NSCondition()
    private var idle: [PostgresConnection]
    private var pids: [ObjectIdentifier: Int32] = [:]
    /// How many connections the pool holds.
    public let size: Int

    /// Opens `size` connections now, so a wrong address or password fails at start.
    /// - Parameter timeout: each connection's statement timeout (`PostgresConnection.init`).
    /// - Throws: `PostgresError` from the first connection that fails.
    public init(conninfo: String, size: Int, timeout: Duration? = nil) throws(PostgresError) {
        precondition(size >= 1, "a pool needs a connection")
        self.size = size
        var connections: [PostgresConnection] = []
        for _ in 0..<size { connections.append(try PostgresConnection(conninfo: conninfo, timeout: timeout)) }
        idle = connections
        for c in connections { pids[ObjectIdentifier(c)] = c.backendPID }
    }

    /// The server processes of this pool's sessions (to tell our own notifications from others').
    public var backendPIDs: Set<Int32> {
        condition.lock(); defer { condition.unlock() }
        return Set(pids.values)
    }

    /// Runs `body` with a connection of its own, waiting for one to be free. A connection known
    /// to be dropped is reconnected before use; one the server dropped while it sat idle (a
    /// restart, `pg_terminate_backend`) is found so only by its first use, which fails: `body`
    /// then runs once more on a fresh session. (What `body` did on the dropped one was not
    /// committed, or, were the session lost during its COMMIT, is done twice: callers give
    /// bodies whose second run changes nothing more, as the relay's idempotent writes are.)
    /// A statement that timed out is not run again: the server is not answering, and the
    /// session is reconnected at its next use instead.
    /// - Throws: what `body` throws, or `PostgresError` when reconnecting fails.
    public func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        condition.lock()
        while idle.isEmpty { condition.wait() }
        let connection = idle.removeLast()
        condition.unlock()
        defer {
            condition.lock()
            idle.append(connection)
            pids[ObjectIdentifier(connection)] = connection.backendPID
            condition.signal()
            condition.unlock()
        }
        if !connection.isHealthy { try connection.reset() }
        do {
            return try body(connection)
        } catch where !connection.isHealthy && (error as? PostgresError)?.timedOut != true {
            try connection.reset()
            return try body(connection)
        }
    }
}
