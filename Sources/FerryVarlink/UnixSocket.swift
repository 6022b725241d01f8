import Glibc

/// The Unix stream socket operations the server and client need, each failing with a
/// `SystemCallError` that names the call and the path.
enum UnixSocket {
    /// The largest path `sockaddr_un` holds (108 bytes including the terminating NUL).
    static let maxPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Creates `path`'s parent directory (mode 0700) if missing, removes a stale socket
    /// at `path`, binds a new socket there with mode `socketMode`, and listens.
    ///
    /// The socket's mode is set before `bind` (`fchmod` on an unbound Unix socket sets
    /// the mode its file gets) and again with `chmod` after it, so the file is never
    /// accessible to others, whatever the umask.
    /// - Returns: the listening descriptor (non-blocking, close-on-exec).
    static func listen(
        path: String, socketMode: mode_t, directoryMode: mode_t, backlog: Int32
    ) throws(SystemCallError) -> Int32 {
        var address = try makeAddress(path)
        let directory = parentDirectory(of: path)
        if !directory.isEmpty {
            try makeDirectories(directory, mode: directoryMode)
        }
        var status = stat()
        if lstat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFSOCK {
            try Syscall.run("unlink \(path)") { unlink(path) }
        }
        let fd = try Syscall.run("socket(AF_UNIX)") {
            socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        }
        do {
            // Best effort: the chmod below is the guarantee, this closes the window.
            _ = fchmod(fd, socketMode)
            let length = socklen_t(MemoryLayout<sa_family_t>.size + addressPathLength(path))
            try Syscall.run("bind \(path)") {
                withUnsafePointer(to: &address) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
                }
            }
            if !path.hasPrefix("@") {
                try Syscall.run("chmod \(path)") { chmod(path, socketMode) }
            }
            try Syscall.run("listen \(path)") { Glibc.listen(fd, backlog) }
        } catch {
            Syscall.close(fd)
            throw error
        }
        return fd
    }

    /// Connects to the socket at `path` (a leading `@` names an abstract socket).
    /// - Returns: a connected, non-blocking, close-on-exec descriptor.
    static func connect(path: String) throws(SystemCallError) -> Int32 {
        var address = try makeAddress(path)
        let fd = try Syscall.run("socket(AF_UNIX)") {
            socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            let length = socklen_t(MemoryLayout<sa_family_t>.size + addressPathLength(path))
            do throws(SystemCallError) {
                try Syscall.run("connect \(path)") {
                    withUnsafePointer(to: &address) { pointer in
                        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
                    }
                }
            } catch where error.errno == EISCONN {
                // An EINTR-interrupted connect completes in the background.
            }
            try setNonBlocking(fd)
        } catch {
            Syscall.close(fd)
            throw error
        }
        return fd
    }

    /// Accepts one pending connection.
    /// - Returns: the non-blocking, close-on-exec descriptor, or `nil` when none is pending.
    static func accept(_ listener: Int32) throws(SystemCallError) -> Int32? {
        let fd: Int32
        do throws(SystemCallError) {
            fd = try Syscall.run("accept") { Glibc.accept(listener, nil, nil) }
        } catch where error.isWouldBlock || error.errno == ECONNABORTED {
            return nil
        }
        do {
            try setNonBlocking(fd)
            try Syscall.run("fcntl(F_SETFD) fd \(fd)") { fcntl(fd, F_SETFD, FD_CLOEXEC) }
        } catch {
            Syscall.close(fd)
            throw error
        }
        return fd
    }

    /// Sets `O_NONBLOCK`.
    static func setNonBlocking(_ fd: Int32) throws(SystemCallError) {
        let flags = try Syscall.run("fcntl(F_GETFL) fd \(fd)") { fcntl(fd, F_GETFL) }
        try Syscall.run("fcntl(F_SETFL) fd \(fd)") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
    }

    /// The peer's pid, uid and gid as recorded by the kernel at connect time.
    static func peerCredentials(_ fd: Int32) throws(SystemCallError) -> PeerCredentials {
        // struct ucred { pid_t pid; uid_t uid; gid_t gid; } (Glibc does not import it).
        var raw: (Int32, UInt32, UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
        try Syscall.run("getsockopt(SO_PEERCRED) fd \(fd)") {
            getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &raw, &length)
        }
        return PeerCredentials(processID: raw.0, userID: raw.1, groupID: raw.2)
    }

    private static func makeAddress(_ path: String) throws(SystemCallError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count <= maxPathLength, !bytes.contains(0) else {
            throw SystemCallError(call: "sockaddr_un for \"\(path)\"", errno: ENAMETOOLONG)
        }
        if bytes[0] == UInt8(ascii: "@") { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        return address
    }

    private static func addressPathLength(_ path: String) -> Int {
        let count = path.utf8.count
        // Abstract names are not NUL-terminated; their length is exact.
        return path.hasPrefix("@") ? count : count + 1
    }

    /// What is wrong with the existing directory of the socket at `path`, if another user
    /// could remove or replace a file in it: writable by group or others without the sticky
    /// bit (with it, as in /tmp, only a file's owner may remove it), or owned by another user
    /// than this one and root. Nil when it is safe, missing (`listen` makes it 0700) or the
    /// socket is abstract.
    static func unsafeDirectory(forSocket path: String) -> (directory: String, reason: String)? {
        let directory = parentDirectory(of: path)
        guard !directory.isEmpty else { return nil }
        var status = stat()
        guard stat(directory, &status) == 0 else { return nil }
        let mode = status.st_mode & 0o7777
        if status.st_uid != geteuid() && status.st_uid != 0 {
            return (directory, "belongs to uid \(status.st_uid)")
        }
        if mode & (S_IWGRP | S_IWOTH) != 0 && mode & S_ISVTX == 0 {
            return (directory, "is writable by other users (mode \(String(mode, radix: 8)))")
        }
        return nil
    }

    private static func parentDirectory(of path: String) -> String {
        guard !path.hasPrefix("@"), let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }

    private static func makeDirectories(_ directory: String, mode: mode_t) throws(SystemCallError) {
        var status = stat()
        if stat(directory, &status) == 0 { return }
        let parent = parentDirectory(of: directory)
        if !parent.isEmpty { try makeDirectories(parent, mode: mode) }
        do throws(SystemCallError) {
            try Syscall.run("mkdir \(directory)") { mkdir(directory, mode) }
        } catch where error.errno == EEXIST {
            return
        }
        // mkdir's mode is filtered by the umask; set it exactly.
        try Syscall.run("chmod \(directory)") { chmod(directory, mode) }
    }
}
