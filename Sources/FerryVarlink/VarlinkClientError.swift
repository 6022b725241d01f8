/// Why a `VarlinkClient` call failed.
public enum VarlinkClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The service answered with a Varlink error (name and parameters).
    case remote(VarlinkError)
    /// The connection closed before the reply arrived (or was closed by `close()`).
    case connectionClosed
    /// The service sent something that is not a valid reply, or a reply nobody asked for;
    /// the connection was closed.
    case protocolViolation(String)
    /// Connecting or another system call failed.
    case system(SystemCallError)
    /// The address is not `unix:PATH` (or a plain path).
    case invalidAddress(String)

    public var description: String {
        switch self {
        case let .remote(error): return error.description
        case .connectionClosed: return "the Varlink connection closed"
        case let .protocolViolation(reason): return "Varlink protocol violation: \(reason)"
        case let .system(error): return error.description
        case let .invalidAddress(address): return "invalid Varlink address \"\(address)\""
        }
    }

    /// The Varlink error the service replied with, if that is what this is.
    public var remoteError: VarlinkError? {
        if case let .remote(error) = self { return error }
        return nil
    }
}
