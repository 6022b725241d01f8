/// Why a `VarlinkServer` could not start.
public enum VarlinkServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Creating the socket, its directory, or the event loop failed.
    case system(SystemCallError)
    /// `start` was called on a server that is running or was stopped.
    case alreadyStarted

    public var description: String {
        switch self {
        case let .system(error): return "Varlink server: \(error)"
        case .alreadyStarted: return "Varlink server: already started"
        }
    }
}
