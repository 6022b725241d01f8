import FerryStore
import Foundation
import Glibc
import Synchronization

/// A small HTTP/1.1 client for one `http://` server (a relay's base URL), in place of
/// URLSession there: URLSession on Linux runs each request through libcurl and libdispatch's
/// sources and queues, whose thread wake-ups per request cost a sending ferryd about a third of
/// its CPU. `https://` stays on URLSession (there is no TLS library here).
///
/// What it promises:
/// - Keep-alive: up to `maxIdle` idle connections are kept and reused (the most recently used
///   first; one idle for `maxIdleAge`, or that the server closed, is dropped instead).
/// - A request whose reused connection fails before any byte of a response (the server closed
///   it as the request went out) is sent once more on a fresh connection, when the request is
///   idempotent; a POST is never sent twice: its failure is thrown.
/// - A request is given up after `timeout` without a byte sent or received (connecting too),
///   so a long-poll that waits less than `timeout` is not cut.
/// - The blocking socket work runs on a dispatch thread, never on the cooperative pool; a
///   request whose task is cancelled ends at once and its connection is closed, not reused.
/// - Response heads are capped at 64 KiB and bodies at `maxBodyBytes`.
final class HTTP1Client: Sendable {
    /// The server's host (a name, or an IPv4 or IPv6 address without brackets) and port.
    let host: String
    let port: Int
    /// `host[:port]` as the `Host` header gives it.
    let hostHeader: String
    let timeout: Duration
    let maxIdle: Int
    let maxBodyBytes: Int
    /// Idle connections older than this are closed rather than reused: below the relay's
    /// default `ConnectionTimeoutSeconds` (30), so a reused one is rarely closed under a request.
    static let maxIdleAge: Duration = .seconds(20)

    private struct Pool {
        var idle: [(connection: HTTP1Connection, since: ContinuousClock.Instant)] = []
        var closed = false
    }

    private let pool = Mutex(Pool())

    /// - Parameters:
    ///   - base: an `http://` URL; its path is not used (requests carry their own).
    ///   - timeout: how long a request may go without progress.
    /// - Throws: `.unsupportedURL` when `base` is not `http://host[:port]`.
    init(base: URL, timeout: Duration, maxIdle: Int = 4, maxBodyBytes: Int) throws(HTTP1ClientError) {
        guard base.scheme?.lowercased() == "http", var host = base.host, !host.isEmpty else { throw .unsupportedURL }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let port = base.port ?? 80
        guard (1...65535).contains(port) else { throw .unsupportedURL }
        self.host = host
        self.port = port
        let bracketed = host.contains(":") ? "[\(host)]" : host
        hostHeader = base.port == nil ? bracketed : "\(bracketed):\(port)"
        self.timeout = timeout
        self.maxIdle = maxIdle
        self.maxBodyBytes = maxBodyBytes
    }

    /// Sends `request` and reads its response (of any status).
    /// - Throws: `HTTP1ClientError`: `.cancelled` when the awaiting task was cancelled,
    ///   `.timedOut`, or why the connection or the response failed.
    func send(_ request: HTTP1Request) async throws(HTTP1ClientError) -> HTTP1Response {
        try await transfer(request, maxBodyBytes: maxBodyBytes)
    }

    /// Sends `request` with its body read from the file at `bodyFrom` (when given), and writes
    /// the body of a 200 response to the file at `bodyTo` (created, or emptied first; the
    /// response then carries no body), both in pieces: a blob of any size costs a read buffer
    /// of memory, not its size. Any other response keeps its body, up to `maxBodyBytes`; so
    /// does a 200 without `bodyTo`.
    /// - Throws: as `send`, and `.file` when a file cannot be read or written.
    func transfer(_ request: HTTP1Request, bodyFrom: String? = nil, bodyTo: String? = nil,
                  maxBodyBytes: Int) async throws(HTTP1ClientError) -> HTTP1Response {
        let cancellation = try HTTP1Cancellation()
        defer { cancellation.close() }
        let result = await withTaskCancellationHandler {
            // A thread at once (`Blocking` gives each call a serial queue of its own), so
            // long-polls never hold anything else back.
            await Blocking.run {
                Result { () throws(HTTP1ClientError) in
                    try self.performTransfer(request, bodyFrom: bodyFrom, bodyTo: bodyTo, maxBodyBytes: maxBodyBytes, cancellation)
                }
            }
        } onCancel: {
            cancellation.cancel()
        }
        return try result.get()
    }

    /// The blocking part of `transfer` (and `send`), on a thread of its own.
    private func performTransfer(_ request: HTTP1Request, bodyFrom: String?, bodyTo: String?, maxBodyBytes: Int,
                                 _ cancellation: HTTP1Cancellation) throws(HTTP1ClientError) -> HTTP1Response {
        var request = request
        var source: (fd: Int32, length: Int, path: String)?
        if let bodyFrom {
            let fd = open(bodyFrom, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { throw .file(call: "open", path: bodyFrom, errno: errno) }
            var st = stat()
            guard fstat(fd, &st) == 0 else {
                let code = errno
                Glibc.close(fd)
                throw .file(call: "stat", path: bodyFrom, errno: code)
            }
            source = (fd, Int(st.st_size), bodyFrom)
            request.body = nil
            request.contentLength = Int(st.st_size)
        }
        defer { if let source { Glibc.close(source.fd) } }
        var sink: (fd: Int32, path: String)?
        if let bodyTo {
            let fd = open(bodyTo, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw .file(call: "create", path: bodyTo, errno: errno) }
            sink = (fd, bodyTo)
        }
        defer { if let sink { Glibc.close(sink.fd) } }
        let head = try request.head(host: hostHeader)
        let exchange = { (connection: HTTP1Connection) throws(HTTP1ClientError) -> HTTP1Response in
            if let sink, ftruncate(sink.fd, 0) != 0 || lseek(sink.fd, 0, SEEK_SET) != 0 {
                throw .file(call: "write", path: sink.path, errno: errno)
            }
            let parser = HTTP1ResponseParser(expectsBody: request.method != "HEAD", maxBodyBytes: maxBodyBytes,
                                             streamsBody: sink != nil)
            let response = try connection.exchange(head: head, body: request.body, bodyFile: source, parser: parser, sink: sink,
                                                   timeout: self.timeout, cancellation: cancellation)
            if response.keepAlive && !cancellation.isCancelled { self.giveBack(connection) }
            return response
        }
        if cancellation.isCancelled { throw .cancelled }
        if let reused = takeIdle() {
            do {
                return try exchange(reused)
            } catch {
                guard request.isIdempotent, !reused.answered, !cancellation.isCancelled else { throw error }
                switch error {
                case .closedBeforeAnswer, .connectionFailed: break
                default: throw error
                }
            }
        }
        let fresh = try HTTP1Connection.open(host: host, port: port, timeout: timeout, cancellation: cancellation)
        return try exchange(fresh)
    }

    /// Closes the idle connections; connections in use are closed when their requests end
    /// instead of kept. Requests sent afterwards still work, on connections of their own.
    /// (Releasing the client closes its idle connections too.)
    func close() {
        // Released (and so closed) after the statement, outside the lock.
        _ = pool.withLock { pool in
            pool.closed = true
            defer { pool.idle = [] }
            return pool.idle
        }
    }

    /// The most recently used idle connection that is still open, if any.
    private func takeIdle() -> HTTP1Connection? {
        while true {
            guard let entry = pool.withLock({ $0.idle.popLast() }) else { return nil }
            if ContinuousClock.now - entry.since < Self.maxIdleAge && entry.connection.isIdleAndOpen { return entry.connection }
            // Too old, or closed by the server: released (and closed) here.
        }
    }

    /// Keeps `connection` for the next request, unless the pool is full or closed (then the
    /// caller's release of it closes it).
    private func giveBack(_ connection: HTTP1Connection) {
        let now = ContinuousClock.now
        pool.withLock { pool in
            guard !pool.closed, pool.idle.count < maxIdle else { return }
            pool.idle.append((connection, now))
        }
    }
}
