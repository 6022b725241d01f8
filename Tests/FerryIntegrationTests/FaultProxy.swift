import Foundation
import Glibc

/// A TCP proxy on loopback that sits between ferryd and a relay and injects faults: it passes
/// bytes through, cuts connections after N bytes of a request or a response, or delays every
/// chunk. It also keeps what clients sent, so a test can replay a captured request.
///
/// One thread per direction of each connection (tests open a handful). The mode is read for
/// every chunk, so changing it affects open connections too.
///
/// `@unchecked Sendable`: `mode`, `connections`, `captures` and `cuts` are guarded by `lock`;
/// the descriptors are owned by their connection's two pump threads.
final class FaultProxy: @unchecked Sendable {
    enum Mode: Sendable, Equatable {
        case pass
        /// Close a connection once it carried this many bytes of requests (mid-body for a
        /// request larger than that).
        case dropRequest(afterBytes: Int)
        /// Close a connection once it carried this many bytes of responses.
        case dropResponse(afterBytes: Int)
        /// The same, only on connections whose first request is a blob's (a path with
        /// `/blobs/`), and abortively (the client gets a reset, as from a proxy or NAT box
        /// that drops the connection); the others pass.
        case dropBlobResponse(afterBytes: Int)
        /// Reset a connection (no orderly end) once it carried this many bytes of requests.
        case resetRequest(afterBytes: Int)
        /// Hold each chunk, both ways, this long before forwarding it.
        case delay(milliseconds: Int)
        /// Forward requests at this many bytes a second (responses pass): a slow uplink, whose
        /// sender sees its body taken into socket buffers at once and then no progress.
        case throttleRequests(bytesPerSecond: Int)
    }

    let port: Int
    let upstreamPort: Int
    private let listenFD: Int32
    private let lock = NSLock()
    private var mode = Mode.pass
    private var captures: [[UInt8]] = []
    private var cutCount = 0
    private var stopped = false
    /// The most request bytes kept for replay.
    private static let captureLimit = 64 << 20
    private var captured = 0

    var url: String { "http://127.0.0.1:\(port)" }

    /// Listens on a free loopback port and forwards to 127.0.0.1:`upstreamPort`.
    init(upstreamPort: Int) throws {
        self.upstreamPort = upstreamPort
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("proxy socket: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 128) == 0 else { close(fd); throw HarnessError("proxy bind/listen: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listenFD = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "fault-proxy-accept"
        thread.start()
    }

    deinit { stop() }

    func set(_ mode: Mode) { lock.withLock { self.mode = mode } }

    /// How many connections a fault cut so far.
    var cuts: Int { lock.withLock { cutCount } }

    /// The bytes each connection sent upstream so far, one entry per connection.
    var capturedRequests: [[UInt8]] { lock.withLock { captures } }

    /// Stops accepting (open connections run on until either side closes).
    func stop() {
        let first = lock.withLock { () -> Bool in defer { stopped = true }; return !stopped }
        if first { shutdown(listenFD, Int32(SHUT_RDWR)); close(listenFD) }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(UInt16(port).bigEndian)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        return a
    }

    private func acceptLoop() {
        while true {
            let client = accept(listenFD, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var address = Self.loopback(port: upstreamPort)
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if rc != 0 {
                // The relay is down: the client sees a reset, as it would without a proxy.
                close(upstream); close(client)
                continue
            }
            let index = lock.withLock { () -> Int in captures.append([]); return captures.count - 1 }
            let link = Link(client: client, upstream: upstream)
            for request in [true, false] {
                let t = Thread { [self] in pump(link, request: request, capture: index) }
                t.name = "fault-proxy-pump"
                t.start()
            }
        }
    }

    /// A proxied connection: closed when both directions are done.
    private final class Link: @unchecked Sendable {
        // @unchecked: `finished` is guarded by `lock`; the descriptors are only shut down
        // (thread-safe) until the second pump closes them.
        let client: Int32
        let upstream: Int32
        private let lock = NSLock()
        private var finished = 0
        private var blob = false
        init(client: Int32, upstream: Int32) { self.client = client; self.upstream = upstream }

        /// Whether the connection's first request is a blob's (set before that request is passed on).
        var isBlob: Bool {
            get { lock.withLock { blob } }
            set { lock.withLock { blob = newValue } }
        }

        func cut() {
            shutdown(client, Int32(SHUT_RDWR))
            shutdown(upstream, Int32(SHUT_RDWR))
        }

        /// Ends the connection with a reset to the client: no FIN goes out (reading is shut
        /// locally to wake the pump), and the close with a zero linger sends RST.
        func reset() {
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            shutdown(client, Int32(SHUT_RD))
            shutdown(upstream, Int32(SHUT_RDWR))
        }

        func pumpDone() {
            let last = lock.withLock { () -> Bool in finished += 1; return finished == 2 }
            if last { close(client); close(upstream) }
        }
    }

    private func pump(_ link: Link, request: Bool, capture: Int) {
        defer { link.pumpDone() }
        let from = request ? link.client : link.upstream
        let to = request ? link.upstream : link.client
        var carried = 0
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let n = recv(from, &buffer, buffer.count, 0)
            if n < 0, errno == EINTR { continue }
            if n <= 0 {
                // Pass the end on (half-close), so HTTP sees what it would see directly.
                shutdown(to, Int32(SHUT_WR))
                return
            }
            var chunk = Array(buffer[0..<n])
            if request && carried == 0, let line = String(decoding: chunk.prefix(512), as: UTF8.self).split(separator: "\r\n").first {
                link.isBlob = line.contains("/blobs/")
            }
            let current = lock.withLock { () -> Mode in
                if request, captured + n <= Self.captureLimit { captures[capture] += chunk; captured += n }
                return mode
            }
            var cutAfter = false
            var abortive = false
            switch current {
            case .pass: break
            case .delay(let ms): usleep(useconds_t(ms * 1000))
            case .dropRequest(let limit) where request, .dropResponse(let limit) where !request,
                 .dropBlobResponse(let limit) where !request && link.isBlob, .resetRequest(let limit) where request:
                if carried + chunk.count >= limit {
                    chunk = Array(chunk.prefix(max(0, limit - carried)))
                    cutAfter = true
                    if case .dropBlobResponse = current { abortive = true }
                    if case .resetRequest = current { abortive = true }
                }
            default: break
            }
            carried += chunk.count
            if request, case .throttleRequests(let rate) = current {
                // A twentieth of a second's worth at a time.
                let slice = max(1, rate / 20)
                var offset = 0
                while offset < chunk.count {
                    let end = min(offset + slice, chunk.count)
                    if !sendAll(to, Array(chunk[offset..<end])) { link.cut(); return }
                    offset = end
                    usleep(50_000)
                }
                continue
            }
            if !sendAll(to, chunk) { link.cut(); return }
            if cutAfter {
                lock.withLock { cutCount += 1 }
                if abortive { link.reset() } else { link.cut() }
                return
            }
        }
    }

    private func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 { if errno == EINTR { continue }; return false }
            offset += n
        }
        return true
    }
}

/// The requests in a captured stream of HTTP/1.1 requests (Content-Length bodies, as URLSession
/// sends them): method, target, headers (lowercased names) and body.
struct CapturedRequest {
    var method: String
    var target: String
    var headers: [String: String]
    var body: [UInt8]

    static func parse(_ stream: [UInt8]) -> [CapturedRequest] {
        var out: [CapturedRequest] = []
        var rest = stream[...]
        while let end = rest.firstRange(of: Array("\r\n\r\n".utf8)) {
            let lines = String(decoding: rest[rest.startIndex..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
            let first = lines[0].split(separator: " ")
            guard first.count >= 2 else { break }
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let length = Int(headers["content-length"] ?? "0") ?? 0
            guard rest.endIndex - end.upperBound >= length else { break }   // cut mid-body
            out.append(CapturedRequest(method: String(first[0]), target: String(first[1]), headers: headers,
                                       body: Array(rest[end.upperBound..<(end.upperBound + length)])))
            rest = rest[(end.upperBound + length)...]
        }
        return out
    }
}
