import FerryCrypto

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One open file descriptor for blob sealing: reads and writes whole buffers, retries `EINTR`,
/// names the failing call and file in its errors, and closes on deinit.
final class BlobFile {
    let path: String
    private var fd: Int32

    private init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    /// Opens `path` for reading.
    static func openForReading(_ path: String) throws(BlobSealError) -> BlobFile {
        let fd = retrying { open(path, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw .io(call: "open", path: path, errno: errno) }
        return BlobFile(fd: fd, path: path)
    }

    /// Creates a new file next to `destination` under a random temporary name.
    static func createTemporary(near destination: String) throws(BlobSealError) -> BlobFile {
        let path = destination + ".tmp-" + Hex.encode(SecureRandom.bytes(8))
        let fd = retrying { open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600) }
        guard fd >= 0 else { throw .io(call: "create", path: path, errno: errno) }
        return BlobFile(fd: fd, path: path)
    }

    /// Reads until `buffer` is full or the file ends; returns the number of bytes read.
    func readFully(into buffer: inout [UInt8]) throws(BlobSealError) -> Int {
        var filled = 0
        let count = buffer.count
        let result: Int32? = buffer.withUnsafeMutableBytes { b in
            while filled < count {
                let n = read(fd, b.baseAddress! + filled, count - filled)
                if n < 0 { if errno == EINTR { continue }; return errno }
                if n == 0 { break }
                filled += n
            }
            return nil
        }
        if let result { throw .io(call: "read", path: path, errno: result) }
        return filled
    }

    /// Writes all of `bytes`.
    func writeAll(_ bytes: [UInt8]) throws(BlobSealError) {
        let result: Int32? = bytes.withUnsafeBytes { b in
            var offset = 0
            while offset < b.count {
                let n = write(fd, b.baseAddress! + offset, b.count - offset)
                if n < 0 { if errno == EINTR { continue }; return errno }
                offset += n
            }
            return nil
        }
        if let result { throw .io(call: "write", path: path, errno: result) }
    }

    /// Flushes to disk, closes, and renames the file to `destination`.
    func commit(to destination: String) throws(BlobSealError) {
        guard fsync(fd) == 0 else { throw .io(call: "fsync", path: path, errno: errno) }
        let rc = close(fd)
        fd = -1
        guard rc == 0 else { throw .io(call: "close", path: path, errno: errno) }
        guard rename(path, destination) == 0 else { throw .io(call: "rename to \(destination)", path: path, errno: errno) }
    }

    /// Closes (if still open) and removes the file.
    func discard() {
        if fd >= 0 { close(fd); fd = -1 }
        unlink(path)
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    static func errorText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }

    private static func retrying(_ call: () -> Int32) -> Int32 {
        while true {
            let rc = call()
            if rc < 0 && errno == EINTR { continue }
            return rc
        }
    }
}
