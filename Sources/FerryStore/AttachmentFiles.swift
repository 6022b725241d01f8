import FerryCrypto
import FerryModel
import Foundation

/// Attachment bytes on disk: `attachments/<first two hex digits>/<sha256>`, written to
/// `attachments/tmp/` first, verified, synced and renamed into place, so a file under its final
/// name is always complete and always hashes to its name. Files are mode 0400: `GetAttachment`
/// hands out their paths, and a client must not change them by mistake.
enum AttachmentFiles {
    static func path(_ sha: String, root: String) -> String {
        root + "/" + sha.prefix(2) + "/" + sha
    }

    static func remove(_ sha: String, root: String) {
        unlink(path(sha, root: root))
    }

    /// Writes `bytes` under their SHA-256 and returns it.
    /// - Throws: `attachmentMismatch` when `expected` is given and differs; `storage` on I/O errors.
    static func write(_ bytes: [UInt8], expected: String?, root: String) throws(FerryError) -> String {
        var hasher = SHA256()
        hasher.update(bytes)
        let sha = Hex.encode(hasher.finalize())
        if let expected, expected != sha { throw .attachmentMismatch(expected: expected, actual: sha) }
        // A copy already there stays only when it is whole: one cut short or changed outside
        // ferryd is replaced by these bytes, which are.
        if isIntact(sha, size: bytes.count, root: root) { return sha }
        let tmp = root + "/tmp/" + UUID().uuidString
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o400)
        guard fd >= 0 else { throw ioError("creating \(tmp)") }
        var ok = bytes.withUnsafeBytes { buffer -> Bool in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 { if errno == EINTR { continue }; return false }
                offset += n
            }
            return true
        }
        ok = ok && fsync(fd) == 0
        close(fd)
        guard ok else { unlink(tmp); throw ioError("writing attachment \(sha)") }
        try install(tmp: tmp, sha: sha, root: root)
        return sha
    }

    /// Copies the file at `source` in, hashing while streaming (bounded memory).
    static func copy(from source: String, expected: String?, maxBytes: Int, root: String) throws(FerryError) -> (sha: String, size: Int) {
        // Not blocking in open: a FIFO put in place of the file (after the caller looked at it)
        // must not hold a thread until someone writes to it. Only a regular file is read.
        let input = open(source, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard input >= 0 else { throw ioError("opening \(source)") }
        defer { close(input) }
        var st = stat()
        guard fstat(input, &st) == 0 else { throw ioError("reading \(source)") }
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw .storage(context: "opening \(source)", message: "it is not a regular file")
        }
        if Int(st.st_size) > maxBytes { throw .attachmentTooLarge(size: Int(st.st_size), limit: maxBytes) }
        _ = fcntl(input, F_SETFL, fcntl(input, F_GETFL) & ~O_NONBLOCK)
        let tmp = root + "/tmp/" + UUID().uuidString
        let output = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o400)
        guard output >= 0 else { throw ioError("creating \(tmp)") }
        var hasher = SHA256()
        var size = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var failure: FerryError?
        loop: while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress!, $0.count) }
            if n < 0 { if errno == EINTR { continue }; failure = ioError("reading \(source)"); break }
            if n == 0 { break }
            size += n
            if size > maxBytes { failure = .attachmentTooLarge(size: size, limit: maxBytes); break }
            buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            var offset = 0
            while offset < n {
                let w = buffer.withUnsafeBytes { Glibc.write(output, $0.baseAddress! + offset, n - offset) }
                if w < 0 { if errno == EINTR { continue }; failure = ioError("writing \(tmp)"); break loop }
                offset += w
            }
        }
        if failure == nil && fsync(output) != 0 { failure = ioError("syncing \(tmp)") }
        close(output)
        if let failure { unlink(tmp); throw failure }
        let sha = Hex.encode(hasher.finalize())
        if let expected, expected != sha { unlink(tmp); throw .attachmentMismatch(expected: expected, actual: sha) }
        // Installed even when a copy is there: this one is verified, and the one there may have
        // been cut short or changed outside ferryd.
        try install(tmp: tmp, sha: sha, root: root)
        return (sha, size)
    }

    /// Whether the file of `sha` is there with `size` bytes that hash to `sha`.
    static func isIntact(_ sha: String, size: Int, root: String) -> Bool {
        let fd = open(path(sha, root: root), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, Int(info.st_size) == size else { return false }
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 { if errno == EINTR { continue }; return false }
            if n == 0 { break }
            buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
        return Hex.encode(hasher.finalize()) == sha
    }

    private static func install(tmp: String, sha: String, root: String) throws(FerryError) {
        let dir = root + "/" + sha.prefix(2)
        mkdir(dir, 0o700)
        guard rename(tmp, path(sha, root: root)) == 0 else {
            unlink(tmp)
            throw ioError("installing attachment \(sha)")
        }
        let dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 { fsync(dfd); close(dfd) }
    }

    /// Reads a whole attachment.
    static func read(_ sha: String, root: String, maxBytes: Int) throws(FerryError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path(sha, root: root)) else {
            throw .attachmentMissing(sha256: sha)
        }
        if data.count > maxBytes { throw .attachmentTooLarge(size: data.count, limit: maxBytes) }
        return [UInt8](data)
    }

    /// Every attachment file present, by name.
    static func listAll(root: String) -> [String] {
        var names: [String] = []
        let fm = FileManager.default
        for dir in (try? fm.contentsOfDirectory(atPath: root)) ?? [] where dir.count == 2 {
            for name in (try? fm.contentsOfDirectory(atPath: root + "/" + dir)) ?? [] where Names.isSHA256Hex(name) {
                names.append(name)
            }
        }
        return names
    }

    /// Removes leftovers of interrupted writes.
    static func clearTemporary(root: String) {
        let tmp = root + "/tmp"
        for name in (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? [] {
            unlink(tmp + "/" + name)
        }
    }

    static func ioError(_ context: String) -> FerryError {
        .storage(context: context, message: String(cString: strerror(errno)))
    }
}
