import Glibc
import Synchronization

/// One end of the socket between ferryd and its https helper: whole `SessionHelperFrame`s
/// written from any thread (one at a time) and read by one reader thread, with blocking I/O.
/// Owns its descriptor: `close` closes it once both sides are done with it.
final class SessionHelperChannel: Sendable {
    let fd: Int32
    private let writing = Mutex(())
    /// Bytes read and not yet taken as frames; touched by the one reader only.
    private let pending = Mutex<[UInt8]>([])

    init(fd: Int32) {
        self.fd = fd
    }

    /// Writes `frame` whole; false when the other end is gone (or the socket failed).
    @discardableResult
    func write(_ frame: SessionHelperFrame) -> Bool {
        let bytes = frame.encoded()
        return writing.withLock { _ in
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let n = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                    if n < 0 {
                        if errno == EINTR { continue }
                        return false
                    }
                    offset += n
                }
                return true
            }
        }
    }

    /// The next frame; nil when the other end closed (or the socket failed).
    /// - Throws: `SessionHelperFrame.Malformed` for bytes that are not a frame.
    func read() throws(SessionHelperFrame.Malformed) -> SessionHelperFrame? {
        var buffer = pending.withLock { b in defer { b = [] }; return b }
        defer { pending.withLock { $0 = buffer } }
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            if let (frame, length) = try SessionHelperFrame.parse(buffer[...]) {
                buffer.removeFirst(length)
                return frame
            }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return nil }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }

    /// Ends both directions: the reader gets nil, the other side sees the end.
    func shutDown() {
        Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }

    func close() {
        Glibc.close(fd)
    }
}
