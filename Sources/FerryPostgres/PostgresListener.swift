import CPostgres
import Foundation

/// A dedicated connection that `LISTEN`s on one channel and hands each notification to a
/// callback, from a thread of its own (`poll()` on the socket, then `PQconsumeInput` and
/// `PQnotifies`). A dropped connection is reconnected with a growing pause; since notifications
/// sent meanwhile are lost, `onReconnect` runs after each reconnection.
///
/// `@unchecked Sendable`: `state` is guarded by `lock`; the connection belongs to the thread.
public final class PostgresListener: @unchecked Sendable {
    private enum State { case idle, running, stopped }

    private let lock = NSLock()
    private var state = State.idle
    private let connection: PostgresConnection
    private let channel: String
    private let onNotification: @Sendable (PostgresNotification) -> Void
    private let onReconnect: @Sendable () -> Void
    private let onError: @Sendable (PostgresError) -> Void
    private let stopped = DispatchSemaphore(value: 0)

    /// Connects and starts listening at once (so a wrong address fails at start).
    /// - Parameter channel: a plain identifier (letters, digits, underscores).
    /// - Throws: `PostgresError` when connecting or `LISTEN` fails.
    public init(conninfo: String, channel: String,
                onNotification: @escaping @Sendable (PostgresNotification) -> Void,
                onReconnect: @escaping @Sendable () -> Void = {},
                onError: @escaping @Sendable (PostgresError) -> Void = { _ in }) throws(PostgresError) {
        precondition(channel.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }, "channel names are identifiers")
        self.channel = channel
        self.onNotification = onNotification
        self.onReconnect = onReconnect
        self.onError = onError
        connection = try PostgresConnection(conninfo: conninfo)
        try connection.execute("LISTEN \(channel)")
    }

    /// Starts the listening thread (once).
    public func start() {
        lock.lock(); defer { lock.unlock() }
        guard state == .idle else { return }
        state = .running
        let thread = Thread { [self] in run() }
        thread.name = "ferry-pg-listen"
        thread.start()
    }

    /// Stops the thread and waits for it (within a quarter second).
    public func stop() {
        lock.lock()
        let wasRunning = state == .running
        state = .stopped
        lock.unlock()
        if wasRunning { stopped.wait() }
    }

    private var running: Bool {
        lock.lock(); defer { lock.unlock() }
        return state == .running
    }

    private func run() {
        var pause = 0.1
        while running {
            do {
                try listenOnce()
                pause = 0.1
            } catch {
                onError(error)
                Thread.sleep(forTimeInterval: pause)
                pause = min(pause * 2, 5)
                guard running else { break }
                do {
                    try connection.reset()
                    try connection.execute("LISTEN \(channel)")
                    onReconnect()
                } catch let failure {
                    onError(failure)
                }
            }
        }
        stopped.signal()
    }

    /// Waits up to 250 ms for the socket, then delivers what arrived.
    private func listenOnce() throws(PostgresError) {
        let fd = connection.socket
        guard fd >= 0, connection.isHealthy else {
            throw PostgresError(call: "listening on \(channel)", message: "the connection is closed")
        }
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let n = poll(&p, 1, 250)
        if n < 0 {
            if errno == EINTR { return }
            throw PostgresError(call: "poll() on the listening connection", message: String(cString: strerror(errno)))
        }
        guard n > 0 else { return }
        try connection.consumeInput()
        for notification in connection.notifications() where notification.channel == channel {
            onNotification(notification)
        }
    }
}
