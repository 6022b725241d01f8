import Foundation
import Glibc

/// A TCP server on loopback for `HTTP1Client` tests: each connection it accepts is handed, with
/// its number (0, 1, ...), to `serve` on a thread of its own, which plays whatever the test
/// needs (answer, stall, close, send garbage).
///
/// `@unchecked Sendable`: `accepted`, `requests` and `stopped` are guarded by `lock`; each
/// connection's descriptor is owned by its thread.
final class ScriptedHTTPServer: @unchecked Sendable {
    let port: Int
    let listener: Int32
    private let lock = NSLock()
    private var accepted = 0
    private var requestHeads: [String] = []
    private var stopped = false

    /// Listens on 127.0.0.1 (or ::1 with `ipv6`) at a free port.
    init(ipv6: Bool = false, _ serve: @escaping @Sendable (ScriptedHTTPServer.Peer, Int) -> Void) throws {
        let family = ipv6 ? AF_INET6 : AF_INET
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var bound: Int32
        var port = 0
        if ipv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_addr = in6addr_loopback
            var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 ? 0 : -1 }
            }
            port = Int(UInt16(bigEndian: address.sin6_port))
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 ? 0 : -1 }
            }
            port = Int(UInt16(bigEndian: address.sin_port))
        }
        guard bound == 0, listen(fd, 16) == 0 else { close(fd); throw POSIXError(.EADDRNOTAVAIL) }
        self.port = port
        listener = fd
        // Weak: the server's release closes the listener, which ends this thread's accept.
        Thread { [weak self] in
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else {
                    if errno == EINTR { continue }
                    return
                }
                guard let self else {
                    Glibc.close(client)
                    return
                }
                let index = lock.withLock { () -> Int in
                    defer { accepted += 1 }
                    return accepted
                }
                let peer = Peer(fd: client, server: self)
                Thread {
                    serve(peer, index)
                    peer.close()
                }.start()
            }
        }.start()
    }

    deinit { stop() }

    /// How many connections were accepted.
    var connections: Int { lock.withLock { accepted } }
    /// The heads of the requests read so far, in order.
    var requests: [String] { lock.withLock { requestHeads } }

    func stop() {
        let first = lock.withLock { () -> Bool in defer { stopped = true }; return !stopped }
        if first { shutdown(listener, Int32(SHUT_RDWR)); close(listener) }
    }

    fileprivate func record(_ head: String) { lock.withLock { requestHeads.append(head) } }

    /// The server's end of one connection.
    final class Peer: @unchecked Sendable {
        // @unchecked: used by its connection's thread only.
        let fd: Int32
        private weak var server: ScriptedHTTPServer?
        private var pending: [UInt8] = []
        private var closed = false

        fileprivate init(fd: Int32, server: ScriptedHTTPServer) {
            self.fd = fd
            self.server = server
        }

        deinit { close() }

        /// Closes the connection now (with unread bytes in it, the kernel resets it).
        func close() {
            guard !closed else { return }
            closed = true
            Glibc.close(fd)
        }

        /// Reads one request (its head, and a body of its Content-Length); nil at the end.
        @discardableResult
        func readRequest() -> (head: String, body: [UInt8])? {
            while pending.firstRange(of: Array("\r\n\r\n".utf8)) == nil {
                guard fill() else { return nil }
            }
            let end = pending.firstRange(of: Array("\r\n\r\n".utf8))!.upperBound
            let head = String(decoding: pending[..<end], as: UTF8.self)
            pending.removeFirst(end)
            server?.record(head)
            var length = 0
            for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
            }
            while pending.count < length {
                guard fill() else { return nil }
            }
            let body = Array(pending[..<length])
            pending.removeFirst(length)
            return (head, body)
        }

        /// Reads one request whose body comes chunked (`Transfer-Encoding: chunked`): its head and
        /// the body put together; nil at the end or on a malformed chunk.
        func readChunkedRequest() -> (head: String, body: [UInt8])? {
            let crlf = Array("\r\n".utf8)
            while pending.firstRange(of: Array("\r\n\r\n".utf8)) == nil {
                guard fill() else { return nil }
            }
            let end = pending.firstRange(of: Array("\r\n\r\n".utf8))!.upperBound
            let head = String(decoding: pending[..<end], as: UTF8.self)
            pending.removeFirst(end)
            var body: [UInt8] = []
            while true {
                while pending.firstRange(of: crlf) == nil {
                    guard fill() else { return nil }
                }
                let line = pending.firstRange(of: crlf)!
                guard let size = Int(String(decoding: pending[..<line.lowerBound], as: UTF8.self).split(separator: ";")[0], radix: 16) else { return nil }
                pending.removeFirst(line.upperBound)
                while pending.count < size + 2 {
                    guard fill() else { return nil }
                }
                body += pending[..<size]
                pending.removeFirst(size + 2)
                if size == 0 { return (head, body) }
            }
        }

        /// Reads up to `count` bytes of whatever comes (fewer at the end).
        func read(_ count: Int) {
            while pending.count < count {
                guard fill() else { return }
            }
        }

        private func fill() -> Bool {
            var buffer = [UInt8](repeating: 0, count: 65536)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return false }
            pending += buffer[..<n]
            return true
        }

        func write(_ text: String) { write(Array(text.utf8)) }

        func write(_ bytes: [UInt8]) {
            var sent = 0
            while sent < bytes.count {
                let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { return }
                sent += n
            }
        }

        /// Answers 200 with `body` and a Content-Length.
        func answer(_ body: String = "{}", status: String = "200 OK", headers: String = "") {
            write("HTTP/1.1 \(status)\r\nContent-Type: application/json\r\n\(headers)Content-Length: \(body.utf8.count)\r\n\r\n\(body)")
        }

        /// Answers every request on the connection until the client closes it.
        func answerAll(_ body: String = "{}") {
            while readRequest() != nil { answer(body) }
        }

        /// Waits until the client closes the connection (or the wait is over).
        func waitForClose(timeout: Double = 10) {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let end = Date().addingTimeInterval(timeout)
            while Date() < end {
                guard poll(&entry, 1, 100) >= 0 else { return }
                if entry.revents != 0 {
                    var byte: UInt8 = 0
                    if recv(fd, &byte, 1, 0) <= 0 { return }
                }
            }
        }
    }
}
