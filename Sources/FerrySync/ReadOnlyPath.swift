/// What to tell a user about a path ferryd cannot write because its file system is read-only
/// to ferryd: most often it is not read-only at all, and ferryd's systemd unit
/// (`ProtectSystem=strict`, `ReadWritePaths=%h`) makes everything outside the home so.
public enum ReadOnlyPath {
    /// The advice for a read-only `path`.
    public static func advice(_ path: String) -> String {
        "if ferryd runs as the systemd user service, everything outside your home directory is read-only to it: "
            + "allow this path with 'systemctl --user edit ferryd' ([Service] ReadWritePaths=\(path)) and restart ferryd, "
            + "or use a path in your home; otherwise remount it writable"
    }
}
