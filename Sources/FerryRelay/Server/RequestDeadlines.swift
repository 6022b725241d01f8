import Foundation

/// Drops clients that trickle a request in: libmicrohttpd's `ConnectionTimeoutSeconds` only
/// closes connections that send nothing at all, so a client sending one byte a second would hold
/// its connection (and, many times over, the connection limit) forever.
///
/// Two rules, both from the configured timeout `T`:
/// - a request head must arrive within `T` of the connection opening or of the previous
///   request's end (`sweep`, run every second by the server, shuts down the sockets that break
///   it; libmicrohttpd then reads EOF and closes them);
/// - once `T` has passed since the head, a body must average at least `minBodyBytesPerSecond`
///   (`bodyTooSlow`, checked by the access handler on each piece of body).
///
/// A request being answered (or waiting in a long-poll) is never timed here: a slow reader of a
/// large blob is throttled by TCP, not dropped.
///
/// `@unchecked Sendable`: every access to `connections` holds `lock`, and `closed` takes it
/// before libmicrohttpd closes a socket, so `sweep` never shuts down a reused descriptor.
final class RequestDeadlines: @unchecked Sendable {
    /// The slowest body accepted past the grace period.
    static let minBodyBytesPerSecond: Int64 = 1024

    private struct Entry {
        var fd: Int32
        /// When the connection started waiting for a request head; nil while a request is handled.
        var awaitingHeadSince: ContinuousClock.Instant?
        /// How many connections were open when this one opened (itself not counted).
        var openBefore: Int
    }

    private let lock = NSLock()
    private var connections: [UInt: Entry] = [:]
    let limit: Duration

    init(limit: Duration) { self.limit = limit }

    func opened(_ connection: UInt, fd: Int32, now: ContinuousClock.Instant = .now) {
        lock.lock(); defer { lock.unlock() }
        connections[connection] = Entry(fd: fd, awaitingHeadSince: now, openBefore: connections.count)
    }

    func closed(_ connection: UInt) {
        lock.lock(); defer { lock.unlock() }
        connections.removeValue(forKey: connection)
    }

    /// Whether `connection` is one too many for `maxConnections`: it opened when that many were
    /// open already, and that many still are. (Those that opened first keep their places: a
    /// burst of connections is counted in the order they came, not the order their requests
    /// are read.)
    func isOverCapacity(_ connection: UInt, maxConnections: Int) -> Bool {
        lock.lock(); defer { lock.unlock() }
        guard let entry = connections[connection] else { return false }
        return entry.openBefore >= maxConnections && connections.count > maxConnections
    }

    /// The head arrived: the request is the access handler's now.
    func headReceived(_ connection: UInt) {
        lock.lock(); defer { lock.unlock() }
        connections[connection]?.awaitingHeadSince = nil
    }

    /// The request ended; a keep-alive connection waits for its next head.
    func requestEnded(_ connection: UInt, now: ContinuousClock.Instant = .now) {
        lock.lock(); defer { lock.unlock() }
        connections[connection]?.awaitingHeadSince = now
    }

    /// Shuts down the sockets whose head is overdue; returns how many.
    @discardableResult
    func sweep(now: ContinuousClock.Instant = .now) -> Int {
        lock.lock(); defer { lock.unlock() }
        var dropped = 0
        for (_, entry) in connections {
            guard let since = entry.awaitingHeadSince, now - since > limit, entry.fd >= 0 else { continue }
            shutdown(entry.fd, Int32(SHUT_RDWR))
            dropped += 1
        }
        return dropped
    }

    /// True when a body that started at `started` has `received` bytes at `now`, past the grace
    /// period and under the minimum rate.
    func bodyTooSlow(started: ContinuousClock.Instant, received: Int64, now: ContinuousClock.Instant = .now) -> Bool {
        let elapsed = now - started
        guard elapsed > limit else { return false }
        return received < Int64(elapsed.components.seconds) * Self.minBodyBytesPerSecond
    }
}
