import Glibc

/// The few file-system calls the folder transport makes, each retrying `EINTR` and failing with a
/// `FolderIOError` that names the call and the path.
enum FolderIO {
    /// What `stat` says about a path, or nil when it does not exist.
    static func kind(of path: String) throws(FolderIOError) -> (isDirectory: Bool, isRegular: Bool, size: Int, device: UInt64, inode: UInt64)? {
        var st = stat()
        guard stat(path, &st) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw FolderIOError(call: "stat", path: path, code: errno)
        }
        let type = st.st_mode & S_IFMT
        return (type == S_IFDIR, type == S_IFREG, Int(st.st_size), UInt64(st.st_dev), UInt64(st.st_ino))
    }

    /// When `path`'s inode last changed (its status change time, which nothing but a change
    /// sets: new contents, a rename into place, a truncation), in seconds since 1970; nil when it
    /// does not exist.
    static func changed(_ path: String) throws(FolderIOError) -> Int64? {
        var st = stat()
        guard stat(path, &st) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw FolderIOError(call: "stat", path: path, code: errno)
        }
        return Int64(st.st_ctim.tv_sec)
    }

    /// Creates the directory `path` (not its parents); an existing directory is fine.
    static func makeDirectory(_ path: String) throws(FolderIOError) {
        if mkdir(path, 0o755) == 0 || errno == EEXIST { return }
        throw FolderIOError(call: "mkdir", path: path, code: errno)
    }

    /// The names in directory `path` (without `.` and `..`), at most `limit` of them.
    static func list(_ path: String, limit: Int = 1 << 20) throws(FolderIOError) -> [String] {
        guard let dir = opendir(path) else { throw FolderIOError(call: "opendir", path: path, code: errno) }
        defer { closedir(dir) }
        var names: [String] = []
        while names.count < limit {
            errno = 0
            guard let entry = readdir(dir) else {
                if errno != 0 { throw FolderIOError(call: "readdir", path: path, code: errno) }
                break
            }
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Opens the regular file `path` for reading; nil when it does not exist (any more). Never
    /// waits: anything else under the name (a FIFO, which would wait for a writer for ever, a
    /// directory, a device, a socket) fails with `FolderIOError.notARegularFile`.
    static func openForReading(_ path: String) throws(FolderIOError) -> Int32? {
        while true {
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
            if fd >= 0 {
                var st = stat()
                guard fstat(fd, &st) == 0 else {
                    let code = errno
                    close(fd)
                    throw FolderIOError(call: "fstat", path: path, code: code)
                }
                guard (st.st_mode & S_IFMT) == S_IFREG else {
                    close(fd)
                    throw FolderIOError(call: "open", path: path, code: FolderIOError.notARegularFile)
                }
                return fd
            }
            if errno == EINTR { continue }
            if errno == ENOENT { return nil }
            throw FolderIOError(call: "open", path: path, code: errno)
        }
    }

    /// The size of the open file `fd`.
    static func size(_ fd: Int32, path: String) throws(FolderIOError) -> Int {
        try sizeAndModified(fd, path: path).size
    }

    /// The file's size, and when it was last modified (Unix seconds).
    static func sizeAndModified(_ fd: Int32, path: String) throws(FolderIOError) -> (size: Int, modified: Int) {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw FolderIOError(call: "fstat", path: path, code: errno) }
        return (Int(st.st_size), Int(st.st_mtim.tv_sec))
    }

    /// Up to `count` bytes at `offset` (fewer only at the end of the file).
    static func read(_ fd: Int32, path: String, at offset: Int, count: Int) throws(FolderIOError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = out.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw FolderIOError(call: "pread", path: path, code: errno)
            }
            if n == 0 { break }
            done += n
        }
        out.removeLast(count - done)
        return out
    }

    /// Writes `bytes` as `dir/name` durably and atomically: into a hidden temporary file in `dir`
    /// that readers skip, fsync it, rename it into place, fsync `dir`. Never rewrites in place.
    /// With `replacing: false`, a `dir/name` already there is kept and the write fails with
    /// `EEXIST` (call `link`): the file is linked into place, which never replaces, where the
    /// file system has hard links, and checked for just before the rename where it has not.
    static func writeAtomically(_ bytes: [UInt8], dir: String, name: String, tempTag: String, replacing: Bool = true) throws(FolderIOError) {
        try writeAtomically(dir: dir, name: name, tempTag: tempTag, replacing: replacing) { fd, tempPath throws(FolderIOError) in
            try writeAll(fd, bytes[...], path: tempPath)
        }
    }

    /// Copies the file at `source` to `dir/name` the same atomic, durable way.
    static func copyAtomically(from source: String, dir: String, name: String, tempTag: String) throws(FolderIOError) {
        guard let input = try openForReading(source) else { throw FolderIOError(call: "open", path: source, code: ENOENT) }
        defer { close(input) }
        try writeAtomically(dir: dir, name: name, tempTag: tempTag) { fd, tempPath throws(FolderIOError) in
            var offset = 0
            while true {
                let chunk = try read(input, path: source, at: offset, count: 1 << 20)
                if chunk.isEmpty { break }
                try writeAll(fd, chunk[...], path: tempPath)
                offset += chunk.count
            }
        }
    }

    /// Removes the file `path`; a missing file is fine.
    static func remove(_ path: String) throws(FolderIOError) {
        if unlink(path) == 0 || errno == ENOENT { return }
        throw FolderIOError(call: "unlink", path: path, code: errno)
    }

    /// Flushes the directory `path` itself, so renames and removals in it are durable.
    static func syncDirectory(_ path: String) throws(FolderIOError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw FolderIOError(call: "open", path: path, code: errno) }
        defer { close(fd) }
        while fsync(fd) != 0 {
            if errno == EINTR { continue }
            // Some file systems (FUSE mounts among them) cannot fsync a directory; the rename is
            // still atomic there.
            if errno == EINVAL || errno == ENOTSUP { return }
            throw FolderIOError(call: "fsync", path: path, code: errno)
        }
    }

    private static func writeAtomically(dir: String, name: String, tempTag: String, replacing: Bool = true,
                                        _ fill: (Int32, String) throws(FolderIOError) -> Void) throws(FolderIOError) {
        let tempPath = dir + "/.tmp-" + tempTag + "-" + name
        let fd = open(tempPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FolderIOError(call: "open", path: tempPath, code: errno) }
        var open = true
        do throws(FolderIOError) {
            try fill(fd, tempPath)
            while fsync(fd) != 0 {
                if errno == EINTR { continue }
                throw FolderIOError(call: "fsync", path: tempPath, code: errno)
            }
            close(fd)
            open = false
            let target = dir + "/" + name
            if replacing {
                guard rename(tempPath, target) == 0 else { throw FolderIOError(call: "rename", path: tempPath, code: errno) }
            } else if link(tempPath, target) == 0 {
                unlink(tempPath)
            } else if errno == EEXIST {
                throw FolderIOError(call: "link", path: target, code: EEXIST)
            } else {
                // No hard links here (some FUSE and FAT mounts): look, then rename.
                guard try kind(of: target) == nil else { throw FolderIOError(call: "link", path: target, code: EEXIST) }
                guard rename(tempPath, target) == 0 else { throw FolderIOError(call: "rename", path: tempPath, code: errno) }
            }
        } catch {
            if open { close(fd) }
            unlink(tempPath)
            throw error
        }
        try syncDirectory(dir)
    }

    private static func writeAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>, path: String) throws(FolderIOError) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, bytes.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                throw FolderIOError(call: "write", path: path, code: errno)
            }
            done += n
        }
    }
}
