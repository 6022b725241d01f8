import FerryClient

/// The exit codes scripts can rely on (listed in `ferryctl help`).
enum ExitCode: Int32 {
    case ok = 0
    /// ferryd reported an error (name and message on stderr), or a local file failed.
    case failure = 1
    /// The command line is wrong.
    case usage = 2
    /// The record, losing version or attachment does not exist.
    case notFound = 3
    /// Nothing listens on the socket: no socket at the path, a socket nobody listens on, or
    /// a file that is not a socket.
    case daemonNotRunning = 4
    /// The socket or the daemon refused this user.
    case permissionDenied = 5
}

/// Why a command failed: what ferryctl prints to stderr and the exit code it returns.
enum CommandFailure: Error {
    /// The command line does not fit the command (exit 2).
    case usage(String)
    /// A call to ferryd failed.
    case client(FerryClientError)
    /// What was asked for does not exist (exit 3), for example `get` of an unknown record.
    case notFound(String)
    /// Something local failed, such as reading an input file (exit 1).
    case local(String)
    /// ferryd did only part of what was asked, or none of it, without an error of its own:
    /// for example an import that left out another owner's data (exit 1).
    case incomplete(String)

    init(_ error: UsageError) {
        self = .usage(error.message)
    }

    /// `entity/id` is not in the space (exit 3), with where to find the ids (`ls` with
    /// `lsOptions`).
    static func unknownRecord(_ entity: String, _ id: String, space: String?, lsOptions: String = "") -> CommandFailure {
        .notFound("no record \(entity)/\(id) in space \(space ?? "private"): list the ids with 'ferryctl ls \(entity)\(lsOptions)'")
    }

    var exitCode: ExitCode {
        switch self {
        case .usage: return .usage
        case .notFound: return .notFound
        case .local, .incomplete: return .failure
        case .client(let error):
            switch error {
            case .daemonNotRunning, .nobodyListening, .notASocket: return .daemonNotRunning
            case .permissionDenied: return .permissionDenied
            case .remote where error.isNotFound: return .notFound
            default: return .failure
            }
        }
    }

    /// The text for stderr (without the `ferryctl: ` prefix).
    var message: String {
        switch self {
        case .usage(let message), .notFound(let message), .local(let message), .incomplete(let message): return message
        case .client(let error): return error.description
        }
    }
}
