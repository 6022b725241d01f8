import Glibc

/// What to tell a user about a path ferryd cannot write because its file system is read-only
/// to ferryd: most often it is not read-only at all, and ferryd's systemd unit
/// (`ProtectSystem=strict`, `ReadWritePaths=%h`) makes everything outside the home so.
public enum ReadOnlyPath {
    /// True when `path` (or, when it does not exist, its directory) is on a file system that
    /// is read-only here.
    public static func isReadOnly(_ path: String) -> Bool {
        var vfs = statvfs()
        if statvfs(path, &vfs) == 0 { return vfs.f_flag & UInt(ST_RDONLY) != 0 }
        guard let slash = path.lastIndex(of: "/") else { return false }
        let parent = slash == path.startIndex ? "/" : String(path[..<slash])
        return statvfs(parent, &vfs) == 0 && vfs.f_flag & UInt(ST_RDONLY) != 0
    }

    /// The advice for a read-only `path`.
    public static func advice(_ path: String) -> String {
        "if ferryd runs as the systemd user service, everything outside your home directory is read-only to it: "
            + "allow this path with 'systemctl --user edit ferryd' ([Service] ReadWritePaths=\(path)) and restart ferryd, "
            + "or use a path in your home; otherwise remount it writable"
    }
}
