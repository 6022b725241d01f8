import FerryClient

/// One `ferryctl` subcommand. Each lives in a file of its own and talks to ferryd only
/// through `FerryClient`.
protocol Command: Sendable {
    /// The word that selects it (`ls`).
    static var name: String { get }
    /// Its arguments as `help` shows them after the name (`ENTITY [--after ID] ...`).
    static var synopsis: String { get }
    /// One line for the command list.
    static var summary: String { get }
    /// More help for `ferryctl help NAME`; may be empty.
    static var details: String { get }
    /// The options it accepts besides the global ones.
    static var options: [OptionSpec] { get }
    /// Whether it acts on records and so accepts `--space`.
    static var takesSpace: Bool { get }
    /// Whether `--space` may be given more than once (follow several spaces).
    static var takesSeveralSpaces: Bool { get }
    /// Runs the command.
    /// - Throws: `CommandFailure`, which decides the message and the exit code.
    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure)
}

extension Command {
    static var details: String { "" }
    static var options: [OptionSpec] { [] }
    static var takesSpace: Bool { false }
    static var takesSeveralSpaces: Bool { false }
}

/// What every command gets from the global options.
struct Context: Sendable {
    /// The socket to talk to: `--socket`, else the default (`FERRY_SOCKET`, ...).
    let socketPath: String
    /// `--json`: print the daemon's replies as JSON, one document per line.
    let json: Bool
    /// `--space`: every value given (only `watch` takes more than one).
    let spaces: [String]

    /// The one space a record command acts on; nil for the private space.
    var space: String? { spaces.last }

    /// Connects to ferryd.
    /// - Throws: `CommandFailure.client` (daemon not running, permission denied, ...).
    func connect() throws(CommandFailure) -> FerryClient {
        do {
            return try FerryClient(socketPath: socketPath)
        } catch {
            throw .client(error)
        }
    }
}

/// Runs a client call, turning its error into a command failure.
func daemon<T>(_ body: () async throws(FerryClientError) -> T) async throws(CommandFailure) -> T {
    do {
        return try await body()
    } catch {
        throw .client(error)
    }
}

extension ParsedArguments {
    /// The positional arguments, checked against `names` (the last `optional` may be left out).
    /// - Throws: `CommandFailure.usage` naming what is missing or extra.
    func positionals(_ names: [String], optional: Int = 0) throws(CommandFailure) -> [String] {
        do {
            try expectPositionals(names, optional: optional)
        } catch {
            throw CommandFailure(error)
        }
        return positionals
    }

    /// An integer option, failing as a usage error.
    func integerOption(_ name: String, in range: ClosedRange<Int64> = Int64.min...Int64.max) throws(CommandFailure) -> Int64? {
        do {
            return try integer(name, in: range)
        } catch {
            throw CommandFailure(error)
        }
    }
}
