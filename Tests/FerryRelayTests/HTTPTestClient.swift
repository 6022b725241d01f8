import Foundation

/// A tiny HTTP/1.1 client over a raw TCP socket: one request per connection
/// (`Connection: close`), so tests also control timing byte by byte.
final class HTTPTestClient: @unchecked Sendable {
    // @unchecked: each client belongs to the one test task that uses it.
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        var text: String { String(decoding: body, as: UTF8.self) }
        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
        }
    }

    struct Failure: Error, CustomStringConvertible { let description: String }

    let fd: Int32

    init(port: Int, timeoutSeconds: Int = 30) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if rc != 0 { let e = errno; close(fd); throw Failure(description: "connect to port \(port): errno \(e)") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 { if errno == EINTR { continue }; return false }
            offset += n
        }
        return true
    }

    /// The request's bytes: headers with Host, Connection: close and Content-Length.
    static func request(_ method: String, _ target: String, token: String? = nil, body: [UInt8]? = nil,
                        headers: [String] = []) -> [UInt8] {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        if let body { head += "Content-Length: \(body.count)\r\n" }
        for h in headers { head += h + "\r\n" }
        head += "\r\n"
        return Array(head.utf8) + (body ?? [])
    }

    /// Reads the response to the end of the connection.
    func readResponse() throws -> Response {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n < 0 { if errno == EINTR { continue }; if data.isEmpty { throw Failure(description: "recv: errno \(errno)") }; break }
            if n == 0 { break }
            data.append(contentsOf: buffer[0..<n])
        }
        guard let end = data.firstRange(of: Array("\r\n\r\n".utf8)) else {
            throw Failure(description: "no complete response head in \(data.count) bytes")
        }
        let head = String(decoding: data[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let parts = head[0].split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw Failure(description: "bad status line \(head[0])") }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Response(status: status, headers: headers, body: Array(data[end.upperBound...]))
    }

    /// A body in chunked transfer coding, in chunks of `chunkSize`, with its final empty chunk.
    static func chunked(_ body: [UInt8], chunkSize: Int = 65536) -> [UInt8] {
        var out: [UInt8] = []
        var offset = 0
        while offset < body.count {
            let n = min(chunkSize, body.count - offset)
            out += Array((String(n, radix: 16) + "\r\n").utf8) + body[offset..<(offset + n)] + Array("\r\n".utf8)
            offset += n
        }
        return out + Array("0\r\n\r\n".utf8)
    }

    /// Waits up to `seconds` for the peer to close; true when it did (EOF or reset), discarding
    /// whatever it sent first.
    func closedByPeer(within seconds: Int) -> Bool {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
    }

    /// One request on a fresh connection.
    static func call(port: Int, _ method: String, _ target: String, token: String? = nil, body: [UInt8]? = nil,
                     headers: [String] = []) throws -> Response {
        let client = try HTTPTestClient(port: port)
        client.send(request(method, target, token: token, body: body, headers: headers))
        return try client.readResponse()
    }
}
