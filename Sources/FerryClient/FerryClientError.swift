import FerryAPI
import FerryJSON
import FerryVarlink
import Glibc

/// Why a `FerryClient` call failed. Each description says what happened and what to do.
public enum FerryClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// There is no socket at the path (nor, often, its directory): ferryd is not running.
    case daemonNotRunning(path: String)
    /// The path is a socket file, but nobody listens on it: a ferryd that stopped without
    /// removing it left it behind. ferryd is not running; a started one replaces the file.
    case nobodyListening(path: String)
    /// Something other than a socket is at the path (`found` says what: "a directory",
    /// "a regular file", ...), so it cannot be ferryd's socket: the path is wrong.
    case notASocket(path: String, found: String)
    /// This user may not talk to the daemon: the socket's file permissions, or ferryd's
    /// peer-credential check (`org.varlink.service.PermissionDenied`), said no.
    case permissionDenied(path: String)
    /// Connecting failed for another reason (for example a path too long for a Unix socket).
    case connectionFailed(path: String, reason: String)
    /// The daemon closed the connection before replying (it stopped, restarted, or dropped
    /// this client).
    case connectionClosed(path: String)
    /// The daemon answered with an error: its fully qualified name (for example
    /// `io.ferry.Store.NotFound`), the human-readable `message` it carries (which says what
    /// to do), and all of its parameters.
    case remote(name: String, message: String, parameters: [String: JSONValue])
    /// The daemon broke the Varlink protocol.
    case protocolError(String)
    /// A reply lacks a field or has one of the wrong type (a client and daemon of
    /// different versions, most likely).
    case malformedReply(WireError)
    /// The call was not sent: an argument cannot go on the wire as given (the text says which
    /// and why).
    case invalidArgument(String)

    /// Maps a Varlink client failure on the connection to `socketPath`.
    init(_ error: VarlinkClientError, socketPath: String) {
        switch error {
        case .remote(let remote):
            if remote.name == VarlinkError.StandardName.permissionDenied {
                self = .permissionDenied(path: socketPath)
            } else {
                self = .remote(name: remote.name, message: Self.message(of: remote), parameters: remote.parameters)
            }
        case .connectionClosed:
            self = .connectionClosed(path: socketPath)
        case .protocolViolation(let reason):
            self = .protocolError(reason)
        case .system(let system):
            switch system.errno {
            case ENOENT, ENOTDIR:
                self = .daemonNotRunning(path: socketPath)
            case ECONNREFUSED:
                self = Self.refused(socketPath)
            case EACCES, EPERM:
                self = .permissionDenied(path: socketPath)
            case ECONNRESET, EPIPE:
                self = .connectionClosed(path: socketPath)
            default:
                self = .connectionFailed(path: socketPath, reason: system.description)
            }
        case .invalidAddress(let address):
            self = .connectionFailed(path: socketPath, reason: "\"\(address)\" is not a socket path")
        }
    }

    /// A refused connection, told apart by what is at `path`: a socket nobody listens on, or
    /// a file of another kind (connecting to one is refused too).
    private static func refused(_ path: String) -> FerryClientError {
        var info = stat()
        guard stat(path, &info) == 0 else { return .daemonNotRunning(path: path) }
        switch info.st_mode & S_IFMT {
        case S_IFSOCK: return .nobodyListening(path: path)
        case S_IFDIR: return .notASocket(path: path, found: "a directory")
        case S_IFREG: return .notASocket(path: path, found: "a regular file")
        default: return .notASocket(path: path, found: "a file that is not a socket")
        }
    }

    /// The error's own `message`, or for the standard Varlink errors (which carry none) an
    /// explanation: they mean client and daemon disagree about the API.
    private static func message(of error: VarlinkError) -> String {
        if let message = error.parameters["message"]?.stringValue { return message }
        let detail = error.parameters.isEmpty ? "" : " " + JSONWriter.string(.object(error.parameters))
        switch error.name {
        case VarlinkError.StandardName.methodNotFound, VarlinkError.StandardName.interfaceNotFound,
             VarlinkError.StandardName.methodNotImplemented, VarlinkError.StandardName.invalidParameter:
            return "the daemon does not accept this call\(detail): ferryd and this client are probably "
                + "of different versions; upgrade the older one"
        default:
            return detail.isEmpty ? "no message" : String(detail.dropFirst())
        }
    }

    /// The last component of a remote error's name (`NotFound` for `io.ferry.Store.NotFound`);
    /// nil for other errors.
    public var remoteErrorName: String? {
        guard case .remote(let name, _, _) = self else { return nil }
        return name.split(separator: ".").last.map(String.init)
    }

    /// True when the daemon said a record, a losing version, an attachment or a transport does
    /// not exist (`NotFound`, `ConflictNotFound`, `AttachmentMissing`, `TransportNotFound`).
    public var isNotFound: Bool {
        switch remoteErrorName {
        case "NotFound", "ConflictNotFound", "AttachmentMissing", "TransportNotFound": return true
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .daemonNotRunning(let path):
            return "ferryd is not running (no socket at \(path)): start it with 'systemctl --user start ferryd' or 'ferryd'"
        case .nobodyListening(let path):
            return "ferryd is not running (nobody listens on the socket at \(path); a ferryd that stopped left it): "
                + "start it with 'systemctl --user start ferryd' or 'ferryd'"
        case .notASocket(let path, let found):
            return "\(path) is \(found), not ferryd's socket: point --socket or FERRY_SOCKET at the socket ferryd listens on "
                + "(by default $XDG_RUNTIME_DIR/ferry/ferryd.sock; ferryd's --socket or Socket= in ferryd.conf moves it)"
        case .permissionDenied(let path):
            return "permission denied on \(path): ferryd admits only the user it runs as (and root, unless ferryd runs as "
                + "the systemd user service, whose sandbox shows root as nobody); "
                + "run this as that user, or start your own ferryd and point --socket or FERRY_SOCKET at it"
        case .connectionFailed(let path, let reason):
            return "cannot connect to ferryd at \(path): \(reason); check the socket path (--socket or FERRY_SOCKET)"
        case .connectionClosed(let path):
            return "ferryd at \(path) closed the connection (it may have stopped, restarted or failed to start): "
                + "check its log (for the user service: 'systemctl --user status ferryd'; once what it reports is fixed, "
                + "'systemctl --user reset-failed ferryd.socket ferryd.service && systemctl --user restart ferryd.socket'; "
                + "a ferryd started by hand: its terminal), then try again"
        case .remote(let name, let message, _):
            return "\(name): \(message)"
        case .protocolError(let reason):
            return "ferryd broke the Varlink protocol (\(reason)): check that ferryd listens on this socket "
                + "and is the same version as this client"
        case .malformedReply(let error):
            return "ferryd sent a reply this client cannot read (\(error)): ferryd and this client are "
                + "probably of different versions; upgrade the older one"
        case .invalidArgument(let reason):
            return reason
        }
    }
}
