import Foundation
import Glibc

/// One TCP connection to an HTTP/1.1 server, driven by blocking calls on a thread outside
/// Swift's cooperative pool: one request and its response at a time.
///
/// The socket is non-blocking; every wait is a poll(2) on it and on the request's
/// `HTTP1Cancellation`, bounded by the request's timeout counted from the last byte sent or
/// received, so a cancelled request ends at once and a stalled one after `timeout` without
/// progress. The descriptor is closed when the connection is released.
// @unchecked Sendable: a connection is used by one thread at a time (the request that made it or
// took it from `HTTP1Client`'s pool, which hands it over under the pool's lock); `answered` and
// the read buffer are touched only by that thread.
final class HTTP1Connection: @unchecked Sendable {
    private let fd: Int32
    private let buffer: UnsafeMutableRawBufferPointer
    /// Whether the last exchange received any byte of a response (a request that failed
    /// before is safe to send again on a fresh connection, if it is idempotent).
    private(set) var answered = false

    /// Bytes read per recv(2): a page of events arrives in a few calls.
    static let readSize = 128 << 10
    /// The most body held of a response other than 200 when the body goes to a file (an
    /// error's text): the file's size limit is no limit for memory.
    static let maxHeldBodyWhileStreaming = 1 << 20

    private init(fd: Int32) {
        self.fd = fd
        buffer = .allocate(byteCount: Self.readSize, alignment: 16)
    }

    deinit {
        _ = Glibc.close(fd)
        buffer.deallocate()
    }

    /// Connects to `host` (a name, or a numeric IPv4 or IPv6 address) at `port`: each address
    /// getaddrinfo(3) gives, in its order, until one takes the connection; TCP_NODELAY is set.
    /// A name is looked up beside the request (`HTTP1Resolver`, through `lookup`), so a lookup
    /// that hangs ends the attempt at `timeout` or at cancellation.
    /// An address that fails in any way (refused, unreachable, no socket of its family, no
    /// answer within its share of the time) passes to the next: while others follow, one gets at
    /// most `perAddress`, so a name whose IPv6 address leads nowhere still reaches its IPv4 one.
    /// - Throws: `.unresolvable`; when every address failed, the most telling failure (refused
    ///   before timed out before unreachable); `.timedOut` when `timeout` passed; `.cancelled`.
    static func open(host: String, port: Int, timeout: Duration, cancellation: HTTP1Cancellation,
                     lookup: @escaping HTTP1Resolver.Lookup = HTTP1Resolver.system) throws(HTTP1ClientError) -> HTTP1Connection {
        let deadline = ContinuousClock.now + timeout
        let addresses = try HTTP1Resolver.resolve(host: host, port: port, deadline: deadline, cancellation: cancellation,
                                                  lookup: lookup)
        var failure: HTTP1ClientError?
        for (i, address) in addresses.enumerated() {
            let last = i == addresses.count - 1
            let attemptDeadline = last ? deadline : min(deadline, ContinuousClock.now + perAddress)
            do {
                return try connect(address, deadline: attemptDeadline, cancellation: cancellation)
            } catch {
                switch error {
                case .cancelled: throw error
                case .timedOut where ContinuousClock.now >= deadline: throw error
                default: break
                }
                if failure.map({ rank(error) > rank($0) }) ?? true { failure = error }
            }
        }
        throw failure ?? .connectFailed(errno: ECONNREFUSED)
    }

    /// The longest one address may take to connect while others follow it.
    static let perAddress: Duration = .seconds(2)

    /// How much a connect failure says about the server: refused (it is there, not listening)
    /// over no answer over cannot be reached at all (a network or an address family this
    /// machine lacks), so the error shown is the one worth acting on.
    private static func rank(_ error: HTTP1ClientError) -> Int {
        switch error {
        case .connectFailed(let code) where code == ECONNREFUSED: return 3
        case .timedOut, .connectFailed(ETIMEDOUT): return 2
        default: return 1
        }
    }

    private static func connect(_ address: HTTP1Resolver.Address, deadline: ContinuousClock.Instant,
                                cancellation: HTTP1Cancellation) throws(HTTP1ClientError) -> HTTP1Connection {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        let fd = socket(address.family, type, address.socketProtocol)
        guard fd >= 0 else { throw .system(call: "socket", errno: errno) }
        // Owned from here: closed on every way out but success.
        let connection = HTTP1Connection(fd: fd)
        let started = address.bytes.withUnsafeBytes { raw in
            Glibc.connect(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        if started != 0 {
            let code = errno
            guard code == EINPROGRESS || code == EINTR else { throw .connectFailed(errno: code) }
            _ = try wait(fd, for: Int16(POLLOUT), until: deadline, cancellation: cancellation)
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { throw .system(call: "getsockopt", errno: errno) }
            guard error == 0 else { throw .connectFailed(errno: error) }
        }
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return connection
    }

    /// Whether an idle connection is still usable: false when the server closed it or sent
    /// something unasked while it sat in the pool (reading it would be the next response's
    /// start). Checked before reuse, so a request is not sent into a closed connection.
    var isIdleAndOpen: Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 0
    }

    /// Sends `head` and `body`, and reads the response.
    /// - Returns: the response; its `keepAlive` is false when the connection is not to carry
    ///   another request (the server said so, or answered before the whole body was sent, or
    ///   sent more than one response).
    /// - Throws: `.timedOut` after `timeout` without a byte sent or received, `.cancelled`,
    ///   `.connectionFailed`, `.closedBeforeAnswer`, `.closedMidAnswer`, `.notHTTP`.
    /// - Parameters:
    ///   - bodyFile: a file descriptor to send the body from (read from its offset 0, `length`
    ///     bytes, in pieces), in place of `body`.
    ///   - sink: a file descriptor the body of a 200 response is written to as it comes (the
    ///     response then carries none); other responses keep theirs.
    func exchange(head: [UInt8], body: Data?, bodyFile: (fd: Int32, length: Int, path: String)? = nil,
                  parser: HTTP1ResponseParser, sink: (fd: Int32, path: String)? = nil, timeout: Duration,
                  cancellation: HTTP1Cancellation) throws(HTTP1ClientError) -> HTTP1Response {
        answered = false
        var parser = parser
        let sentAll: Bool
        do {
            if let bodyFile {
                sentAll = try send(head, file: bodyFile, timeout: timeout, cancellation: cancellation)
            } else {
                sentAll = try send(head, body ?? Data(), timeout: timeout, cancellation: cancellation)
            }
        } catch {
            // A server that refuses a body (413) may answer and close before reading it all:
            // its answer is then in the receive buffer, and worth more than the send's error.
            guard case .connectionFailed = error,
                  var response = try? receive(&parser, sink: sink, timeout: timeout, cancellation: cancellation, waiting: false)
            else { throw error }
            response.keepAlive = false
            return response
        }
        var response = try receive(&parser, sink: sink, timeout: timeout, cancellation: cancellation, waiting: true)
        if !sentAll || parser.unconsumed > 0 { response.keepAlive = false }
        return response
    }

    /// Sends `head`, then `file.length` bytes of `file` read in pieces of `readSize`.
    /// - Returns: false when the server sent something before all was sent (as `send` above).
    private func send(_ head: [UInt8], file: (fd: Int32, length: Int, path: String), timeout: Duration,
                      cancellation: HTTP1Cancellation) throws(HTTP1ClientError) -> Bool {
        let headSent = head.withUnsafeBytes { head in
            Result { () throws(HTTP1ClientError) -> Bool in try send([head], timeout: timeout, cancellation: cancellation) }
        }
        guard try headSent.get() else { return false }
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.readSize, alignment: 16)
        defer { chunk.deallocate() }
        var offset = 0
        while offset < file.length {
            let n = pread(file.fd, chunk.baseAddress, min(chunk.count, file.length - offset), off_t(offset))
            if n < 0 {
                if errno == EINTR { continue }
                throw .file(call: "read", path: file.path, errno: errno)
            }
            // The file is shorter than when its length was taken: what was promised cannot be sent.
            if n == 0 { throw .file(call: "read", path: file.path, errno: EIO) }
            guard try send([UnsafeRawBufferPointer(rebasing: chunk[0..<n])], timeout: timeout, cancellation: cancellation) else {
                return false
            }
            offset += n
        }
        return true
    }

    /// Sends `head` then `body`, gathered in as few sendmsg(2) calls as the socket takes.
    /// - Returns: false when the server sent something (an early answer, or its end) before
    ///   all was sent: then the rest is not sent and the response is read.
    private func send(_ head: [UInt8], _ body: Data, timeout: Duration, cancellation: HTTP1Cancellation) throws(HTTP1ClientError) -> Bool {
        let result = head.withUnsafeBytes { head in
            body.withUnsafeBytes { body in
                Result { () throws(HTTP1ClientError) -> Bool in
                    try send([head, body], timeout: timeout, cancellation: cancellation)
                }
            }
        }
        return try result.get()
    }

    private func send(_ parts: [UnsafeRawBufferPointer], timeout: Duration, cancellation: HTTP1Cancellation) throws(HTTP1ClientError) -> Bool {
        var vectors = parts.filter { $0.count > 0 }.map { iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count) }
        var first = 0
        var lastProgress = ContinuousClock.now
        while first < vectors.count {
            if cancellation.isCancelled { throw .cancelled }
            let sent = vectors.withUnsafeMutableBufferPointer { vectors -> Int in
                var message = msghdr()
                message.msg_iov = vectors.baseAddress! + first
                message.msg_iovlen = vectors.count - first
                return sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
            }
            if sent >= 0 {
                lastProgress = .now
                var left = sent
                while left > 0 {
                    let length = vectors[first].iov_len
                    if left >= length {
                        left -= length
                        first += 1
                    } else {
                        vectors[first].iov_base += left
                        vectors[first].iov_len -= left
                        left = 0
                    }
                }
                continue
            }
            let code = errno
            if code == EINTR { continue }
            guard code == EAGAIN || code == EWOULDBLOCK else { throw .connectionFailed(sending: true, errno: code) }
            let events = try Self.wait(fd, for: Int16(POLLOUT) | Int16(POLLIN), until: lastProgress + timeout, cancellation: cancellation)
            if events & Int16(POLLIN) != 0 { return false }
        }
        return true
    }

    /// Reads until `parser` has a whole response. `waiting` false: only what is already
    /// received (then `.closedMidAnswer` stands for "not all of it is here").
    private func receive(_ parser: inout HTTP1ResponseParser, sink: (fd: Int32, path: String)? = nil, timeout: Duration,
                         cancellation: HTTP1Cancellation, waiting: Bool) throws(HTTP1ClientError) -> HTTP1Response {
        var lastProgress = ContinuousClock.now
        /// Writes the body read so far of a 200 response to the sink.
        func drain(_ parser: inout HTTP1ResponseParser) throws(HTTP1ClientError) {
            guard let sink, let status = parser.headStatus else { return }
            // Another status's body (an error) is held, and only as much as a reply may have.
            guard status == 200 else {
                if parser.heldBodyCount > Self.maxHeldBodyWhileStreaming {
                    throw .notHTTP(.bodyTooLarge(limit: Self.maxHeldBodyWhileStreaming))
                }
                return
            }
            let bytes = parser.takeBody()
            var offset = 0
            while offset < bytes.count {
                let w = bytes[offset...].withUnsafeBytes { write(sink.fd, $0.baseAddress, $0.count) }
                if w < 0 {
                    if errno == EINTR { continue }
                    throw .file(call: "write", path: sink.path, errno: errno)
                }
                offset += w
            }
        }
        while true {
            if cancellation.isCancelled { throw .cancelled }
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n > 0 {
                answered = true
                lastProgress = .now
                let outcome: HTTP1ResponseParser.Outcome
                do {
                    outcome = try parser.parse(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                } catch {
                    throw .notHTTP(error)
                }
                try drain(&parser)
                if case .complete(var response) = outcome {
                    if sink != nil && response.status == 200 { response.body = [] }
                    return response
                }
                continue
            }
            if n == 0 {
                guard answered else { throw .closedBeforeAnswer }
                var response: HTTP1Response
                do { response = try parser.finish() } catch { throw .closedMidAnswer }
                try drain(&parser)
                if sink != nil && response.status == 200 { response.body = [] }
                return response
            }
            let code = errno
            if code == EINTR { continue }
            guard code == EAGAIN || code == EWOULDBLOCK else { throw .connectionFailed(sending: false, errno: code) }
            guard waiting else { throw .closedMidAnswer }
            _ = try Self.wait(fd, for: Int16(POLLIN), until: lastProgress + timeout, cancellation: cancellation)
        }
    }

    /// Waits until `fd` reports one of `events` (or an error or hang-up), `cancellation` fires,
    /// or `deadline` passes.
    /// - Returns: the events `fd` reported.
    /// - Throws: `.cancelled`, `.timedOut`, `.system` when poll(2) fails.
    static func wait(_ fd: Int32, for events: Int16, until deadline: ContinuousClock.Instant,
                     cancellation: HTTP1Cancellation) throws(HTTP1ClientError) -> Int16 {
        while true {
            if cancellation.isCancelled { throw .cancelled }
            let now = ContinuousClock.now
            guard now < deadline else { throw .timedOut }
            let left = (deadline - now).components
            // Rounded up, so a wait never ends a hair before the deadline and spins.
            let milliseconds = min(left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000 + 1, Int64(Int32.max))
            var entries = (pollfd(fd: fd, events: events, revents: 0), pollfd(fd: cancellation.waitFD, events: Int16(POLLIN), revents: 0))
            let ready = withUnsafeMutablePointer(to: &entries) {
                $0.withMemoryRebound(to: pollfd.self, capacity: 2) { poll($0, 2, Int32(milliseconds)) }
            }
            if ready < 0 {
                let code = errno
                if code == EINTR { continue }
                throw .system(call: "poll", errno: code)
            }
            if entries.1.revents != 0 { throw .cancelled }
            if ready > 0 && entries.0.revents != 0 { return entries.0.revents }
        }
    }
}
