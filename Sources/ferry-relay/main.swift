// ferry-relay: the HTTP relay server. `serve` runs it; `admin` manages owners and tokens in the
// same storage (safe while serve runs: SQLite in WAL mode, or PostgreSQL); `check-config` reads
// the configuration and looks at the storage without changing it, and says what is wrong.
import FerryAPI
import FerryRelay
import Foundation

let usage = """
    usage: ferry-relay serve [--config FILE]
           ferry-relay admin [--config FILE] create-owner --owner HEX [--quota BYTES] [--device NAME]
           ferry-relay admin [--config FILE] tokens OWNER
           ferry-relay admin [--config FILE] revoke OWNER TOKEN_ID
           ferry-relay admin [--config FILE] set-quota OWNER BYTES|default
           ferry-relay check-config [--config FILE]
           ferry-relay version
    The default config file is /etc/ferry-relay/ferry-relay.conf when it exists.
    Exit status: 0 done, 1 failed (the reason is printed), 2 usage error, 3 unknown owner or
    token.
    """

/// A command-line mistake: the message and the usage go to stderr, exit status 2.
struct UsageError: Error { let message: String }

/// An owner or token the storage does not have: the message goes to stderr, exit status 3.
struct NotFoundError: Error { let message: String }

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data(("ferry-relay: " + message + "\n").utf8))
    exit(status)
}

/// Splits `--config FILE` out of the arguments and loads the configuration; also the file
/// read, if any (`--config FILE`, or the default one when it exists).
func loadConfiguration(_ arguments: inout [String]) -> (RelayConfiguration, file: String?) {
    var configuration = RelayConfiguration()
    var path: String?
    if let i = arguments.firstIndex(of: "--config") {
        guard i + 1 < arguments.count else { fail("--config needs a file\n" + usage, status: 2) }
        path = arguments[i + 1]
        arguments.removeSubrange(i...(i + 1))
    } else if FileManager.default.fileExists(atPath: "/etc/ferry-relay/ferry-relay.conf") {
        path = "/etc/ferry-relay/ferry-relay.conf"
    }
    if let path {
        do { try configuration.load(file: path) } catch { fail(error.description, status: 2) }
    }
    return (configuration, path)
}

var arguments = Array(CommandLine.arguments.dropFirst())
// `ferry-relay COMMAND --help` (or -h) asks for the usage too.
if arguments.count > 1, arguments.dropFirst().contains(where: { $0 == "--help" || $0 == "-h" }) {
    print(usage)
    exit(0)
}
switch arguments.first {
case "serve":
    arguments.removeFirst()
    let (configuration, _) = loadConfiguration(&arguments)
    guard arguments.isEmpty else { fail("unexpected arguments: \(arguments.joined(separator: " "))\n" + usage, status: 2) }
    ServeCommand.run(configuration)
case "admin":
    arguments.removeFirst()
    let (configuration, file) = loadConfiguration(&arguments)
    do {
        try AdminCommand.run(arguments, configuration: configuration, file: file)
    } catch let error as UsageError {
        fail(error.message + "\n" + usage, status: 2)
    } catch let error as NotFoundError {
        fail(error.message, status: 3)
    } catch {
        fail("\(error)", status: 1)
    }
case "check-config", "--check-config":
    arguments.removeFirst()
    let (configuration, _) = loadConfiguration(&arguments)
    guard arguments.isEmpty else { fail("unexpected arguments: \(arguments.joined(separator: " "))\n" + usage, status: 2) }
    do {
        for warning in configuration.warnings { FileHandle.standardError.write(Data(("ferry-relay: warning: " + warning + "\n").utf8)) }
        print("configuration OK; " + (try RelayBackend.check(configuration)))
    } catch {
        fail("the configuration reads, but the storage cannot be used: \(error)", status: 1)
    }
case "version", "--version":
    arguments.removeFirst()
    guard arguments.isEmpty else { fail("unexpected arguments: \(arguments.joined(separator: " "))\n" + usage, status: 2) }
    // The same version ferryd and ferryctl print: the three are built and released together.
    print("ferry-relay \(FerryVersion.string)")
case "--help", "-h", "help":
    print(usage)
case nil:
    fail("expected a command (serve, admin, check-config, version or help)\n" + usage, status: 2)
default:
    fail("unknown command \"\(arguments[0].prefix(80))\"; expected serve, admin, check-config, version or help\n" + usage, status: 2)
}
