import Foundation

/// ferryd's command line. Pure: parsing touches nothing.
public struct CommandLineOptions: Sendable, Equatable {
    public var configPath: String?
    public var stateDirectory: String?
    public var socketPath: String?
    public var logLevel: DaemonConfiguration.LogLevel?
    public var checkConfig = false
    public var version = false
    public var help = false

    public static let usage = """
    usage: ferryd [--config FILE] [--state-dir DIR] [--socket PATH] [--log-level LEVEL]
                  [--check-config] [--version] [--help]

      --config FILE     the config file (default: $XDG_CONFIG_HOME/ferry/ferryd.conf, if it exists)
      --state-dir DIR   where the store lives (default: $XDG_STATE_HOME/ferry)
      --socket PATH     the API socket (default: $XDG_RUNTIME_DIR/ferry/ferryd.sock)
      --log-level LEVEL debug, info, notice, warning or error
      --check-config    check the configuration, print every setting in effect, and exit
      --version         print the version and exit

    Signals: SIGTERM stops gracefully, SIGHUP reloads the configuration.

    """

    /// What is wrong with the command line.
    public struct Problem: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    public static func parse(_ arguments: [String]) throws(Problem) -> CommandLineOptions {
        var o = CommandLineOptions()
        var i = 0
        func value(_ flag: String) throws(Problem) -> String {
            i += 1
            guard i < arguments.count, !arguments[i].hasPrefix("--") else { throw Problem(description: "\(flag) needs a value") }
            return arguments[i]
        }
        while i < arguments.count {
            var arg = arguments[i]
            var inline: String?
            if arg.hasPrefix("--"), let eq = arg.firstIndex(of: "=") {
                inline = String(arg[arg.index(after: eq)...])
                arg = String(arg[..<eq])
            }
            func take(_ flag: String) throws(Problem) -> String {
                if let inline { return inline }
                return try value(flag)
            }
            switch arg {
            case "--config": o.configPath = try take(arg)
            case "--state-dir": o.stateDirectory = try absolute(try take(arg), arg)
            case "--socket": o.socketPath = try absolute(try take(arg), arg)
            case "--log-level":
                let name = try take(arg)
                guard let level = DaemonConfiguration.LogLevel(name: name) else {
                    throw Problem(description: "--log-level is one of debug, info, notice, warning, error")
                }
                o.logLevel = level
            case "--check-config": o.checkConfig = true
            case "--version": o.version = true
            case "--help", "-h": o.help = true
            default: throw Problem(description: "unknown argument \"\(arg.prefix(80))\"")
            }
            i += 1
        }
        return o
    }

    private static func absolute(_ path: String, _ flag: String) throws(Problem) -> String {
        if path.hasPrefix("/") { return path }
        return FileManager.default.currentDirectoryPath + "/" + path
    }
}
