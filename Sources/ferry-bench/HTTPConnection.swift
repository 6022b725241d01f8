import Foundation
import Glibc

/// A blocking HTTP/1.1 keep-alive connection to a loopback server, for the relay benchmark:
/// requests with a Content-Length body, replies read by Content-Length or chunked.
final class HTTPConnection: @unchecked Sendable {
    // @unchecked: each instance is used by one thread at a time.
    private let fd: Int32
    private var pending: [UInt8] = []

    struct Reply {
        var status: Int
        var body: [UInt8]
    }

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("socket failed: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { close(fd); throw BenchError("connect to 127.0.0.1:\(port) failed: \(String(cString: strerror(errno)))") }
    }

    deinit { close(fd) }

    /// Sends a request without waiting for the reply (for long-polls left open).
    func send(_ method: String, _ path: String, token: String?, body: [UInt8] = [], contentType: String = "application/json") throws {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        if !body.isEmpty { head += "Content-Type: \(contentType)\r\n" }
        head += "\r\n"
        try write(Array(head.utf8) + body)
    }

    func request(_ method: String, _ path: String, token: String?, body: [UInt8] = [], contentType: String = "application/json") throws -> Reply {
        try send(method, path, token: token, body: body, contentType: contentType)
        return try readReply()
    }

    private func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { throw BenchError("HTTP write failed: \(String(cString: strerror(errno)))") }
            sent += n
        }
    }

    private func fill() throws {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { throw BenchError("HTTP read failed (connection closed)") }
        pending += buffer[0..<n]
    }

    private func line() throws -> String {
        while true {
            if let i = pending.firstIndex(of: 10) {
                let text = String(decoding: pending[..<i], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                pending.removeFirst(i + 1)
                return text
            }
            try fill()
        }
    }

    private func take(_ count: Int) throws -> [UInt8] {
        while pending.count < count { try fill() }
        let out = Array(pending[..<count])
        pending.removeFirst(count)
        return out
    }

    func readReply() throws -> Reply {
        let statusLine = try line()
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw BenchError("not an HTTP reply: \(statusLine.prefix(80))") }
        var length: Int?
        var chunked = false
        while true {
            let header = try line()
            if header.isEmpty { break }
            let lower = header.lowercased()
            if lower.hasPrefix("content-length:") { length = Int(lower.dropFirst(15).trimmingCharacters(in: .whitespaces)) }
            if lower.hasPrefix("transfer-encoding:") && lower.contains("chunked") { chunked = true }
        }
        if chunked {
            var body: [UInt8] = []
            while true {
                guard let size = Int(try line(), radix: 16) else { throw BenchError("bad chunk size") }
                if size == 0 { _ = try line(); break }
                body += try take(size)
                _ = try line()
            }
            return Reply(status: status, body: body)
        }
        return Reply(status: status, body: try take(length ?? 0))
    }
}
