import Glibc

/// Why the relay's state directory cannot be used, in the operator's terms.
public struct StateDirectoryError: Error, CustomStringConvertible {
    public let path: String
    public let errno: Int32
    /// What was being done: "reach", "create", "lock" (another serve holds it: `EWOULDBLOCK`).
    public let operation: String

    public var description: String {
        let why = String(cString: strerror(errno))
        if operation == "lock" && (errno == EWOULDBLOCK || errno == EAGAIN) {
            return "another ferry-relay serves from the state directory \(path): stop it first, or give this one a StateDirectory= "
                + "of its own (relays that share a PostgreSQL database each have their own)"
        }
        switch errno {
        case EACCES, EPERM:
            return "cannot \(operation) the state directory \(path) (\(why)): run as the user that owns it "
                + "(root for the system unit's /var/lib/ferry-relay, whose files live in /var/lib/private), "
                + "or set StateDirectory= in the file given with --config to a directory you can write"
        case ENOTDIR, EEXIST:
            return "cannot \(operation) the state directory \(path): something other than a directory is in the way; "
                + "set StateDirectory= to a directory"
        default:
            return "cannot \(operation) the state directory \(path) (\(why)); set StateDirectory= to a directory you can write"
        }
    }
}
