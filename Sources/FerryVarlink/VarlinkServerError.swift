/// Why a `VarlinkServer` could not start.
public enum VarlinkServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Creating the socket, its directory, or the event loop failed.
    case system(SystemCallError)
    /// `start` was called on a server that is running or was stopped.
    case alreadyStarted
    /// The socket's directory exists and lets another user replace the socket (`reason`
    /// says how): the server does not listen there.
    case unsafeDirectory(path: String, reason: String)

    public var description: String {
        switch self {
        case let .system(error): return "Varlink server: \(error)"
        case .alreadyStarted: return "Varlink server: already started"
        case let .unsafeDirectory(path, reason):
            return "the socket's directory \(path) \(reason), so another user could replace the socket: "
                + "make it yours and private ('chmod 700 \(path)'), or choose another socket path"
        }
    }
}
