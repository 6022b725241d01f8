import Glibc

/// Outgoing bytes waiting for the socket to accept them: append at the back, write from
/// the front, without shifting the buffer on every partial write.
struct ByteQueue {
    private var storage: [UInt8] = []
    private var head = 0

    var count: Int { storage.count - head }
    var isEmpty: Bool { head == storage.count }

    mutating func append(_ bytes: [UInt8]) {
        if isEmpty {
            storage.removeAll(keepingCapacity: storage.capacity <= 64 << 10)
            head = 0
        }
        storage.append(contentsOf: bytes)
    }

    /// Writes as much as the non-blocking socket takes.
    /// - Returns: the number of bytes written (0 when the socket is full).
    /// - Throws: `SystemCallError` for anything but `EAGAIN`, e.g. `EPIPE` when the peer is gone.
    mutating func write(to fd: Int32) throws(SystemCallError) -> Int {
        var total = 0
        while !isEmpty {
            let written: Int
            let start = head
            do throws(SystemCallError) {
                written = try Syscall.run("send fd \(fd)") {
                    storage.withUnsafeBytes { bytes in
                        Glibc.send(fd, bytes.baseAddress! + start, bytes.count - start, Int32(MSG_NOSIGNAL))
                    }
                }
            } catch where error.isWouldBlock {
                break
            }
            head += written
            total += written
        }
        if head >= 1 << 20 && head * 2 >= storage.count {
            storage.removeSubrange(0..<head)
            head = 0
        }
        return total
    }
}
