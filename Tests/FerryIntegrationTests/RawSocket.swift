import Foundation

/// A plain Unix stream socket for throwing bytes at the daemon, bypassing every client library.
final class RawSocket {
    let fd: Int32

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HarnessError("socket: \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (i, b) in path.utf8.enumerated() where i < buffer.count - 1 { buffer[i] = b }
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if rc != 0 { let e = errno; close(fd); throw HarnessError("connect \(path): errno \(e)") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Sends everything it can; returns false when the peer closed (EPIPE/ECONNRESET).
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

    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// What the peer sent next: one NUL-terminated message (without the NUL), or nil when it
    /// closed the connection (or did not answer within the timeout).
    func receive() -> String? {
        var data: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = recv(fd, &byte, 1, 0)
            if n <= 0 { return data.isEmpty ? nil : String(decoding: data, as: UTF8.self) }
            if byte == 0 { return String(decoding: data, as: UTF8.self) }
            data.append(byte)
        }
    }

    /// True when the peer closed the connection (reads EOF or reset).
    func isClosedByPeer() -> Bool {
        var byte: UInt8 = 0
        while true {
            let n = recv(fd, &byte, 1, 0)
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
            // Discard whatever came before the close (e.g. an error reply).
        }
    }
}
