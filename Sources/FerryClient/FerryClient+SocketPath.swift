import Glibc

extension FerryClient {
    /// The socket ferryd listens on by default, for the current process's environment and user:
    /// `$FERRY_SOCKET` when set, else `$XDG_RUNTIME_DIR/ferry/ferryd.sock`, else
    /// `/run/user/<uid>/ferry/ferryd.sock`.
    public static func defaultSocketPath() -> String {
        defaultSocketPath(environment: currentEnvironment(), userID: getuid())
    }

    /// The default socket for `environment` and `userID`: `FERRY_SOCKET` when set and not
    /// empty, else `XDG_RUNTIME_DIR/ferry/ferryd.sock` when that is an absolute path (the XDG
    /// spec says to ignore a relative one, and ferryd does), else
    /// `/run/user/<userID>/ferry/ferryd.sock`. Pure: reads nothing but its arguments.
    public static func defaultSocketPath(environment: [String: String], userID: UInt32) -> String {
        if let explicit = environment["FERRY_SOCKET"], !explicit.isEmpty {
            return explicit
        }
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return (runtime.hasSuffix("/") ? String(runtime.dropLast()) : runtime) + "/ferry/ferryd.sock"
        }
        return "/run/user/\(userID)/ferry/ferryd.sock"
    }

    /// The variables `defaultSocketPath` reads, from this process's environment.
    static func currentEnvironment() -> [String: String] {
        var result: [String: String] = [:]
        for name in ["FERRY_SOCKET", "XDG_RUNTIME_DIR"] {
            if let value = getenv(name) { result[name] = String(cString: value) }
        }
        return result
    }
}
