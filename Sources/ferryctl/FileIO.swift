import Glibc

/// The local file work of `put -`, `attach` and `detach`: whole reads and writes that
/// retry `EINTR` and fail with a message naming the file and the reason.
enum FileIO {
    /// A local file failure, ready for stderr.
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ what: String, _ path: String, errno code: Int32) {
            description = "cannot \(what) \(path): \(String(cString: strerror(code)))"
        }
        init(_ description: String) {
            self.description = description
        }
    }

    /// Reads all of `fd` until end of file.
    /// - Throws: `Failure` on a read error, or when there are more than `limit` bytes.
    static func readAll(fd: Int32, name: String, limit: Int) throws(Failure) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure("read", name, errno: errno)
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > limit {
                throw Failure("\(name) holds more than \(limit) bytes, the most this command reads")
            }
        }
    }

    /// Opens `path` for reading.
    /// - Throws: `Failure` naming the path.
    static func openForReading(_ path: String) throws(Failure) -> Int32 {
        while true {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            if fd >= 0 { return fd }
            if errno == EINTR { continue }
            throw Failure("open", path, errno: errno)
        }
    }

    /// The size of the regular file at `path`.
    /// - Throws: `Failure` when it cannot be read or is not a regular file.
    static func regularFileSize(_ path: String) throws(Failure) -> Int64 {
        var info = stat()
        guard stat(path, &info) == 0 else { throw Failure("read", path, errno: errno) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw Failure("\(path) is not a regular file") }
        return Int64(info.st_size)
    }

    /// Creates (or truncates) `path` for writing, mode 0666 before the umask.
    /// - Throws: `Failure` naming the path.
    static func create(_ path: String) throws(Failure) -> Int32 {
        while true {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
            if fd >= 0 { return fd }
            if errno == EINTR { continue }
            throw Failure("create", path, errno: errno)
        }
    }

    /// Writes all of `bytes` to `fd`.
    /// - Throws: `Failure` naming `name`.
    static func write(_ bytes: [UInt8], to fd: Int32, name: String) throws(Failure) {
        guard Output.write(fd, bytes) else { throw Failure("write", name, errno: errno) }
    }

    /// Copies all of `source` to `fd`.
    /// - Returns: the number of bytes copied.
    /// - Throws: `Failure` naming the file that failed.
    static func copy(from source: String, to fd: Int32, name: String) throws(Failure) -> Int64 {
        let input = try openForReading(source)
        defer { close(input) }
        var chunk = [UInt8](repeating: 0, count: 256 << 10)
        var total: Int64 = 0
        while true {
            let count = chunk.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure("read", source, errno: errno)
            }
            if count == 0 { return total }
            try write(Array(chunk[0..<count]), to: fd, name: name)
            total += Int64(count)
        }
    }
}
