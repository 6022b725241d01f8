import FerryAPI
import FerryClient
import FerryJSON

/// `ferryctl version`: this client's version and the daemon's.
enum VersionCommand: Command {
    static let name = "version"
    static let synopsis = ""
    static let summary = "print the versions of ferryctl and of the running ferryd"
    static let details = """
        Exits 0 even when ferryd is not running (its line then says why), so it always tells
        at least ferryctl's version.
        """

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        _ = try arguments.positionals([])
        var daemonInfo: ServiceInfo?
        var daemonError: FerryClientError?
        do {
            let client = try FerryClient(socketPath: context.socketPath)
            daemonInfo = try await client.serviceInfo()
        } catch {
            daemonError = error
        }
        if context.json {
            var object: [String: JSONValue] = ["ferryctl": .string(FerryVersion.string)]
            if let daemonInfo { object["ferryd"] = daemonInfo.json }
            if let daemonError { object["error"] = .string(daemonError.description) }
            Output.json(.object(object))
            return
        }
        Output.line("ferryctl \(FerryVersion.string)")
        if let daemonInfo {
            Output.line("ferryd \(daemonInfo.version) (\(daemonInfo.product), at \(context.socketPath))")
        } else if let daemonError {
            Output.line("ferryd not reachable at \(context.socketPath)")
            Output.note("ferryctl: \(daemonError)")
        }
    }
}
