import CMicroHTTPD
import FerrySync
import Foundation
import Synchronization

/// The HTTP/1.1 server: libmicrohttpd glue around `RelayService`, and the only code that
/// touches CMicroHTTPD.
///
/// libmicrohttpd runs `threads` internal threads, each an epoll loop over its connections, with
/// suspend/resume: a long-poll pull suspends its connection (no thread, no timeout) and
/// `LongPollHub` resumes it on a push or at its deadline. A slow client costs a socket and a
/// buffer, never a thread; `ConnectionTimeoutSeconds` closes idle ones, and `RequestDeadlines`
/// drops those that trickle a request in.
///
/// `@unchecked Sendable`: `daemon` is set by `start` and cleared by `stop`, both called by the one
/// thread that runs the process; libmicrohttpd's threads only read the immutable fields.
public final class MicroHTTPDServer: @unchecked Sendable {
    public let service: RelayService
    /// The port the listening socket is bound to (the configured one, or the one picked for 0).
    public let port: Int
    private let listenFD: Int32
    private var daemon: OpaquePointer?
    private let deadlines: RequestDeadlines
    private let stopSweeping = DispatchSemaphore(value: 0)
    // libmicrohttpd keeps pointers to the PEM texts and the log target for the daemon's life.
    private var pems: [UnsafeMutablePointer<CChar>] = []
    private var logTarget: UnsafeMutablePointer<ferry_mhd_log_target>?

    /// Why the server could not start.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Binds and listens on `host:port` (numeric address; port 0 picks a free one).
    public init(service: RelayService, host: String, port: Int) throws(Failure) {
        self.service = service
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var info: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &info)
        guard rc == 0, let info else {
            throw Failure(description: "Listen=\(host):\(port): not a numeric address (\(String(cString: gai_strerror(rc))))")
        }
        defer { freeaddrinfo(info) }
        let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            let e = errno; close(fd)
            throw Failure(description: "bind \(host):\(port): \(String(cString: strerror(e)))")
        }
        guard listen(fd, 1024) == 0 else {
            let e = errno; close(fd)
            throw Failure(description: "listen \(host):\(port): \(String(cString: strerror(e)))")
        }
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let family = address.ss_family
        let boundPort: UInt16 = withUnsafePointer(to: &address) { p in
            if family == sa_family_t(AF_INET6) {
                return p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            }
            return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
        listenFD = fd
        self.port = Int(boundPort)
        deadlines = RequestDeadlines(limit: .seconds(service.configuration.connectionTimeoutSeconds))
    }

    /// True when this libmicrohttpd was built with TLS (Debian 12's is, with GnuTLS).
    public static var supportsTLS: Bool { ferry_mhd_has_tls() != 0 }

    /// Connections accepted beyond `MaxConnections` only to be answered 503 and closed, so a
    /// client past the limit is told instead of waiting in the listen queue.
    static func overCapacitySlots(_ maxConnections: Int) -> Int { max(16, maxConnections / 16) }

    /// When a request was last turned away for capacity (the log says so once a minute).
    private let capacityNoticed = Mutex<ContinuousClock.Instant?>(nil)

    /// Starts serving.
    /// - Parameters: PEM texts of the certificate chain and key for HTTPS, or nil for HTTP.
    public func start(certificatePEM: String? = nil, keyPEM: String? = nil) throws(Failure) {
        let c = service.configuration
        if certificatePEM != nil, !MicroHTTPDServer.supportsTLS {
            throw Failure(description: "[TLS] is set but this libmicrohttpd has no TLS support")
        }
        let cert = certificatePEM.map { strdup($0)! }
        let key = keyPEM.map { strdup($0)! }
        pems = [cert, key].compactMap { $0 }
        let cls = Unmanaged.passUnretained(self).toOpaque()
        let target = UnsafeMutablePointer<ferry_mhd_log_target>.allocate(capacity: 1)
        target.initialize(to: ferry_mhd_log_target(sink: { cls, message in
            let server = Unmanaged<MicroHTTPDServer>.fromOpaque(cls!).takeUnretainedValue()
            server.libraryLogged(String(cString: message))
        }, cls: cls))
        logTarget = target
        daemon = ferry_mhd_start(
            listenFD, UInt32(c.threads), UInt32(c.maxConnections + Self.overCapacitySlots(c.maxConnections)),
            UInt32(c.connectionTimeoutSeconds), 64 * 1024,
            { cls, connection, _, method, _, data, size, conCls in
                let server = Unmanaged<MicroHTTPDServer>.fromOpaque(cls!).takeUnretainedValue()
                return server.access(connection!, method: method!, data: data, size: size!, conCls: conCls!)
            }, cls,
            { cls, connection, conCls, _ in
                guard let cls else { return }
                let server = Unmanaged<MicroHTTPDServer>.fromOpaque(cls).takeUnretainedValue()
                if let connection { server.deadlines.requestEnded(UInt(bitPattern: connection)) }
                guard let conCls, let raw = conCls.pointee else { return }
                let exchange = Unmanaged<Exchange>.fromOpaque(raw).takeRetainedValue()
                conCls.pointee = nil
                server.completed(exchange)
            },
            { _, uri, _ in
                Unmanaged.passRetained(Exchange(target: String(cString: uri))).toOpaque()
            },
            { cls, connection, _, code in
                guard let cls, let connection else { return }
                let server = Unmanaged<MicroHTTPDServer>.fromOpaque(cls).takeUnretainedValue()
                if code.rawValue == 0 {   // MHD_CONNECTION_NOTIFY_STARTED (1 is CLOSED)
                    server.deadlines.opened(UInt(bitPattern: connection), fd: ferry_mhd_connection_fd(connection))
                } else {
                    server.deadlines.closed(UInt(bitPattern: connection))
                }
            },
            target, cert, key)
        guard daemon != nil else {
            throw Failure(description: "libmicrohttpd did not start (see the lines it logged above)")
        }
        service.hub.start()
        let sweeper = Thread { [deadlines, stopSweeping, logger = service.logger, hub = service.hub] in
            while stopSweeping.wait(timeout: .now() + 1) == .timedOut {
                // Waiting pulls whose client left are answered, so their connections close.
                hub.resumeDisconnected()
                let n = deadlines.sweep()
                if n > 0 { logger.notice("dropped \(n) connection(s) that sent no complete request head within ConnectionTimeoutSeconds") }
            }
        }
        sweeper.name = "ferry-relay-deadlines"
        sweeper.start()
    }

    /// Stops accepting, wakes every long-poll (they answer with what there is), and stops.
    public func stop() {
        guard let d = daemon else { return }
        stopSweeping.signal()
        service.hub.shutdown()
        // Give the resumed long-polls a moment to be answered before the daemon closes them.
        usleep(100_000)
        MHD_stop_daemon(d)
        daemon = nil
        close(listenFD)
        for p in pems { free(p) }
        pems = []
        logTarget?.deallocate()
        logTarget = nil
    }

    /// A message of libmicrohttpd's own, in the relay's log: at debug level when it is about
    /// one client's request or connection (a malformed request, a peer that left, a TLS
    /// handshake a client broke off or never began, as a device that does not trust the
    /// certificate or plain HTTP to the HTTPS port do; each such request already got its
    /// answer or was closed, and a scanner could fill the log), as a warning otherwise (it
    /// could not accept connections, for example). Its HTML error pages are left out.
    func libraryLogged(_ message: String) {
        var text = message.trimmingCharacters(in: .whitespacesAndNewlines)
        if let page = text.range(of: " ('<html>"), let end = text.range(of: "')", range: page.upperBound..<text.endIndex) {
            text.removeSubrange(page.lowerBound..<end.upperBound)
        }
        service.logger.log(Self.isAboutOneClient(text) ? .debug : .warning, "libmicrohttpd: \(text)", ["component": "libmicrohttpd"])
    }

    /// Whether a message of libmicrohttpd's is about one client's request or connection.
    static func isAboutOneClient(_ message: String) -> Bool {
        let lower = message.lowercased()
        if lower.contains("accept") { return false }
        return ["request", "connection", "client", "handshake", "tls encryption or decryption error"].contains { lower.contains($0) }
    }

    // MARK: Per-request state

    /// One request's progress. `@unchecked Sendable`: used only by the libmicrohttpd thread that
    /// owns its connection (and the completion callback on that thread).
    final class Exchange: @unchecked Sendable {
        enum Phase {
            case new
            case collecting(RelayService.Prepared)
            /// A long-poll parked until the deadline it was given first, having read up to `after`.
            case waiting(RelayService.Prepared, deadline: ContinuousClock.Instant, after: Cursor)
            case done
        }
        let target: String
        let started = ContinuousClock.now
        var bodyStarted = ContinuousClock.now
        var phase = Phase.new
        /// Set when a chunked body passed its route's limit: the rest is read and dropped, and
        /// the answer is this 413 (libmicrohttpd cannot answer before the upload ends).
        var overLimit: RelayError?
        var discardUntil: Int64 = 0
        var route = "unrouted"
        var status = 0
        var buffer: [UInt8] = []
        var spool: (path: String, fd: Int32)?
        var received: Int64 = 0
        var method = ""

        init(target: String) { self.target = target }
    }

    /// A streamed body's source, kept alive by libmicrohttpd until it frees the response.
    private final class StreamBox {
        let source: any BodySource
        init(_ source: any BodySource) { self.source = source }
    }

    /// A connection pointer handed to the resume closure (libmicrohttpd allows resuming from
    /// any thread).
    private struct ConnectionHandle: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    private func access(_ connection: OpaquePointer, method: UnsafePointer<CChar>, data: UnsafePointer<CChar>?,
                        size: UnsafeMutablePointer<Int>, conCls: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result {
        guard let raw = conCls.pointee else { return MHD_Result.NO }
        let exchange = Unmanaged<Exchange>.fromOpaque(raw).takeUnretainedValue()
        switch exchange.phase {
        case .new:
            deadlines.headReceived(UInt(bitPattern: connection))
            let limit = service.configuration.maxConnections
            if deadlines.isOverCapacity(UInt(bitPattern: connection), maxConnections: limit) {
                // Beyond MaxConnections: told so at once (and closed), never left hanging.
                let now = ContinuousClock.now
                if capacityNoticed.withLock({ last in
                    guard last.map({ now - $0 > .seconds(60) }) ?? true else { return false }
                    last = now
                    return true
                }) {
                    service.logger.notice("at MaxConnections=\(limit): new requests are answered 503 until connections close; raise MaxConnections in ferry-relay.conf if this goes on")
                }
                exchange.route = "over-capacity"
                return respond(RelayError.atCapacity(maxConnections: limit).response, exchange, connection)
            }
            exchange.bodyStarted = .now
            exchange.method = String(cString: method)
            let head = HTTPRequestHead(
                method: exchange.method, target: exchange.target,
                authorization: header(connection, "Authorization"),
                contentLength: header(connection, "Content-Length").flatMap { Int($0) },
                contentType: header(connection, "Content-Type"),
                remoteAddress: remoteAddress(connection),
                forwardedFor: header(connection, "X-Forwarded-For"))
            switch service.prepare(head) {
            case .failure(let error):
                exchange.route = service.routeName(head)
                return respond(error.response, exchange, connection)
            case .success(let prepared):
                exchange.route = prepared.endpoint.name
                if case .spool = prepared.bodyPlan {
                    do { exchange.spool = try service.blobs.createTemporary() } catch {
                        service.logger.error("cannot create a temporary blob file: \(error)")
                        return respond(RelayError.storage("temporary file").response, exchange, connection)
                    }
                }
                exchange.phase = .collecting(prepared)
                return MHD_Result.YES
            }
        case .collecting(let prepared):
            let count = size.pointee
            if count > 0 {
                size.pointee = 0
                exchange.received += Int64(count)
                if deadlines.bodyTooSlow(started: exchange.bodyStarted, received: exchange.received) {
                    service.logger.notice("dropped a connection whose body came in under \(RequestDeadlines.minBodyBytesPerSecond) bytes/s",
                                          ["route": exchange.route])
                    return MHD_Result.NO
                }
                if exchange.overLimit != nil {
                    // Read and drop up to as much again (at most 16 MiB) so the client gets its
                    // 413; beyond that, close.
                    return exchange.received <= exchange.discardUntil ? MHD_Result.YES : MHD_Result.NO
                }
                switch prepared.bodyPlan {
                case .discard:
                    return MHD_Result.YES
                case .buffer(let limit):
                    // Only a chunked body can get here past its limit (Content-Length was checked).
                    guard exchange.received <= Int64(limit) else {
                        exchange.buffer = []
                        exchange.overLimit = .tooLarge("the body is over the limit of \(limit) bytes")
                        exchange.discardUntil = Int64(limit) + min(Int64(limit), 16 << 20)
                        return MHD_Result.YES
                    }
                    data!.withMemoryRebound(to: UInt8.self, capacity: count) {
                        exchange.buffer.append(contentsOf: UnsafeBufferPointer(start: $0, count: count))
                    }
                case .spool(let limit):
                    guard exchange.received <= limit else {
                        if let spool = exchange.spool {
                            close(spool.fd)
                            unlink(spool.path)
                            exchange.spool = nil
                        }
                        exchange.overLimit = .tooLarge("the blob is over the limit of \(limit) bytes")
                        exchange.discardUntil = limit + min(limit, 16 << 20)
                        return MHD_Result.YES
                    }
                    guard let spool = exchange.spool else { return MHD_Result.NO }
                    var offset = 0
                    while offset < count {
                        let n = write(spool.fd, data! + offset, count - offset)
                        if n < 0 { if errno == EINTR { continue }; return MHD_Result.NO }
                        offset += n
                    }
                }
                return MHD_Result.YES
            }
            if let error = exchange.overLimit { return respond(error.response, exchange, connection) }
            var body = RequestBody.none
            switch prepared.bodyPlan {
            case .discard: break
            case .buffer: body = .bytes(exchange.buffer); exchange.buffer = []
            case .spool:
                guard let spool = exchange.spool else { return MHD_Result.NO }
                fsync(spool.fd)
                close(spool.fd)
                exchange.spool = nil
                body = .file(path: spool.path, size: Int(exchange.received))
            }
            return run(prepared, body: body, waiting: .asked, exchange, connection)
        case .waiting(let prepared, let deadline, let after):
            // Stopping: answer with what is there rather than wait again.
            let waiting: RelayService.WaitAllowance = service.hub.isStopped ? .answerNow : .until(deadline, after: after)
            return run(prepared, body: .none, waiting: waiting, exchange, connection)
        case .done:
            size.pointee = 0
            return MHD_Result.YES
        }
    }

    private func run(_ prepared: RelayService.Prepared, body: RequestBody, waiting: RelayService.WaitAllowance, _ exchange: Exchange,
                     _ connection: OpaquePointer) -> MHD_Result {
        switch service.handle(prepared, body: body, waiting: waiting) {
        case .respond(let response):
            return respond(response, exchange, connection)
        case .wait(let owner, let generation, let deadline, let after):
            exchange.phase = .waiting(prepared, deadline: deadline, after: after)
            MHD_suspend_connection(connection)
            let handle = ConnectionHandle(pointer: connection)
            if !service.hub.wait(owner: owner, generation: generation, deadline: deadline, fd: ferry_mhd_connection_fd(connection), resume: {
                MHD_resume_connection(handle.pointer)
            }) {
                // A push landed between the query and the registration: query again now.
                MHD_resume_connection(connection)
            }
            return MHD_Result.YES
        }
    }

    private func respond(_ response: HTTPResponse, _ exchange: Exchange, _ connection: OpaquePointer) -> MHD_Result {
        exchange.phase = .done
        var response = response
        var mhd: OpaquePointer?
        switch response.body {
        case .empty:
            mhd = MHD_create_response_from_buffer(0, nil, MHD_ResponseMemoryMode(rawValue: 0)!)
        case .bytes(let bytes):
            mhd = bytes.withUnsafeBytes {
                MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: $0.baseAddress), MHD_ResponseMemoryMode(rawValue: 2)!)
            }
        case .file(let path, let size):
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            if fd >= 0 {
                mhd = MHD_create_response_from_fd64(UInt64(size), fd)
                if mhd == nil { close(fd) }
            } else {
                response = RelayError.missing(what: "the blob").response
                if case .bytes(let bytes) = response.body {
                    mhd = bytes.withUnsafeBytes {
                        MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: $0.baseAddress), MHD_ResponseMemoryMode(rawValue: 2)!)
                    }
                }
            }
        case .stream(let size, let source):
            let box = Unmanaged.passRetained(StreamBox(source)).toOpaque()
            mhd = MHD_create_response_from_callback(UInt64(size), 64 << 10, { cls, pos, buffer, max in
                let source = Unmanaged<StreamBox>.fromOpaque(cls!).takeUnretainedValue().source
                // -2 is MHD_CONTENT_READER_END_WITH_ERROR: the client sees a short body, never wrong bytes.
                guard let bytes = try? source.read(offset: Int64(pos), maxBytes: max), !bytes.isEmpty, bytes.count <= max,
                      let buffer else { return -2 }
                bytes.withUnsafeBytes { UnsafeMutableRawPointer(buffer).copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
                return bytes.count
            }, box, { cls in Unmanaged<StreamBox>.fromOpaque(cls!).release() })
            if mhd == nil { Unmanaged<StreamBox>.fromOpaque(box).release() }
        }
        guard let mhd else { return MHD_Result.NO }
        for (name, value) in response.headers { MHD_add_response_header(mhd, name, value) }
        exchange.status = response.status
        let result = MHD_queue_response(connection, UInt32(response.status), mhd)
        MHD_destroy_response(mhd)
        return result
    }

    private func completed(_ exchange: Exchange) {
        if let spool = exchange.spool {
            close(spool.fd)
            unlink(spool.path)
        }
        let elapsed = ContinuousClock.now - exchange.started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        if exchange.status != 0 {
            service.metrics.record(route: exchange.route, status: exchange.status, seconds: seconds)
            service.logger.debug("\(exchange.method) \(exchange.route) \(exchange.status)",
                                 ["route": exchange.route, "status": String(exchange.status)])
        }
    }

    private func header(_ connection: OpaquePointer, _ name: String) -> String? {
        MHD_lookup_connection_value(connection, MHD_ValueKind.HEADER_KIND, name).map { String(cString: $0) }
    }

    private func remoteAddress(_ connection: OpaquePointer) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        ferry_mhd_client_address(connection, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
