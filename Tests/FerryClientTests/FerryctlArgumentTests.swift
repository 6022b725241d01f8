import FerryJSON
import Foundation
import Glibc
import Testing

/// ferryctl's command line, through the real binary: usage errors exit 2 before any
/// connection is made, help exits 0, and a missing daemon exits 4 wherever the socket path
/// came from. (ferryctl is an executable, so its parser is tested from the outside.)
@Suite struct FerryctlArgumentTests {
    let ferryctl: FerryctlRunner
    /// A socket path nothing listens on: a usage error must be reported before connecting,
    /// so these commands never get as far as exit 4.
    let nowhere = "/tmp/ferryctl-test-nowhere/ferryd.sock"

    init() throws {
        ferryctl = try FerryctlRunner()
    }

    @Test(arguments: [
        ([], "missing command"),
        (["frobnicate"], "unknown command 'frobnicate'"),
        (["ls"], "missing ENTITY"),
        (["ls", "note", "--limit", "abc"], "--limit must be an integer, 1 to 1000"),
        (["ls", "note", "--limit", "0"], "--limit must be an integer, 1 to 1000"),
        (["ls", "note", "--limit=1001"], "--limit must be an integer, 1 to 1000"),
        (["ls", "note", "--order", "size"], "--order must be id or stamp"),
        (["ls", "note", "--where", "done"], "invalid filter \"done\""),
        (["ls", "note", "--where", "a=1", "--where", "a=2"], "the field a is given twice"),
        (["ls", "note", "--after"], "--after needs a value"),
        (["ls", "note", "--limit", "1", "--limit", "2"], "--limit is given more than once"),
        (["get", "note"], "missing ID"),
        (["get", "note", "a", "b"], "unexpected argument \"b\""),
        (["rm"], "missing ENTITY"),
        (["put", "note"], "missing JSON"),
        (["put", "note", "[1]"], "the payload must be a JSON object, not an array"),
        (["put", "note", "X", "{bad"], "the payload is not valid JSON"),
        (["put", "note", "a", "b", "{}"], "unexpected argument"),
        (["status", "--space", "team"], "--space does not apply to 'status'"),
        (["get", "note", "X", "--space", "a", "--space", "b"], "--space is given more than once"),
        (["watch", "--all-spaces", "--space", "a"], "--all-spaces and --space exclude each other"),
        (["watch", "--since", "-1"], "--since must be an integer, at least 0"),
        (["watch", "extra"], "unexpected argument"),
        (["--bogus", "status"], "unknown option --bogus for 'status'"),
        (["status", "--json=yes"], "--json takes no value"),
        (["space"], "missing ls or create"),
        (["space", "frob"], "unknown space command 'frob'"),
        (["space", "create"], "missing NAME"),
        (["space", "ls", "--kind", "shared"], "--kind applies to 'space create'"),
        (["detach", "ab", "--json"], "--json prints the reply, not the bytes"),
        (["conflicts", "note"], "missing ID"),
        (["outbox", "--limit", "x"], "--limit must be an integer"),
        (["help", "nosuch"], "unknown command 'nosuch'"),
        (["attach"], "missing FILE"),
        (["transport", "add", "r", "relay", "https://relay.example", "--token", "a", "--code", "b"], "use one of --token or --code"),
        (["transport", "add", "f", "folder", "/tmp", "--code", "b"], "--code and --token are for relay transports"),
    ])
    func usageError(_ arguments: [String], _ message: String) throws {
        let result = try ferryctl.run(["--socket", nowhere] + arguments)
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr.contains(message), "\(result)")
        #expect(result.stdout.isEmpty, "\(result)")
    }

    @Test func aGlobalOptionWithoutItsValueSaysSo() throws {
        let trailing = try ferryctl.run(["--socket"])
        #expect(trailing.status == 2 && trailing.stderr.hasPrefix("ferryctl: --socket needs a path\n"), "\(trailing)")
        #expect(!trailing.stderr.contains("missing command"), "\(trailing)")
        let swallowed = try ferryctl.run(["--socket", "status"])
        #expect(swallowed.status == 2, "\(swallowed)")
        #expect(swallowed.stderr.contains("--socket needs a path before the command ('status' was taken as the path)"), "\(swallowed)")
        let space = try ferryctl.run(["--json", "--space"])
        #expect(space.status == 2 && space.stderr.contains("--space needs a name"), "\(space)")
    }

    @Test func usageErrorShowsTheCommandsSynopsis() throws {
        let result = try ferryctl.run(["ls", "--socket", nowhere])
        #expect(result.stderr.contains("usage: ferryctl ls ENTITY [--after ID]"), "\(result)")
        #expect(result.stderr.contains("see 'ferryctl help ls'"), "\(result)")
    }

    @Test func helpListsCommandsAndExitCodes() throws {
        for arguments in [["help"], ["--help"], ["-h"]] {
            let result = try ferryctl.run(arguments)
            #expect(result.status == 0, "\(result)")
            for word in ["status", "get ENTITY ID", "put ", "rm ENTITY ID", "ls ENTITY", "watch", "conflicts", "attach",
                         "detach", "outbox", "sync", "space", "version", "--socket PATH", "--json", "--space NAME",
                         "Exit codes:", "4  ferryd is not running", "3  not found", "5  permission denied", "2  usage error"] {
                #expect(result.stdout.contains(word), "'\(word)' missing from \(arguments): \(result)")
            }
            // Every command that takes --space is named where the overview says which do.
            let spaced = result.stdout.components(separatedBy: "--space applies to").last?.components(separatedBy: "Exit codes").first ?? ""
            for command in ["get", "put", "rm", "ls", "watch", "conflicts", "outbox", "sync", "transport", "owner", "relay"] {
                #expect(spaced.contains(command), "'\(command)' missing from: \(spaced)")
            }
            for line in result.lines where line.count > 80 {
                Issue.record("a line of \(line.count) columns in \(arguments): \(line)")
            }
        }
    }

    @Test(arguments: ["status", "get", "put", "rm", "ls", "watch", "conflicts", "attach", "detach", "outbox",
                      "sync", "space", "version", "help", "transport", "relay", "owner", "export", "import"])
    func everyCommandHasHelp(_ command: String) throws {
        let viaHelp = try ferryctl.run(["help", command])
        let viaFlag = try ferryctl.run([command, "--help"])
        #expect(viaHelp.status == 0 && viaFlag.status == 0, "\(viaHelp)\n\(viaFlag)")
        #expect(viaHelp.stdout.hasPrefix("usage: ferryctl \(command)"), "\(viaHelp)")
        #expect(viaHelp.stdout == viaFlag.stdout)
        #expect(viaHelp.stdout.contains("--socket PATH"))
        for line in viaHelp.lines where line.count > 80 {
            Issue.record("a line of \(line.count) columns in 'ferryctl help \(command)': \(line)")
        }
        #expect(!viaHelp.stdout.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" },
                "a control character in 'ferryctl help \(command)'")
    }

    /// Alternatives inside a group keep their bar when a synopsis is split into usage lines.
    @Test func alternativesInsideAGroupKeepTheirBar() throws {
        #expect(try ferryctl.run(["help", "transport"]).stdout.contains("add NAME relay URL (--code CODE | --token TOKEN)"))
        #expect(try ferryctl.run(["help", "watch"]).stdout.contains("[--space S ... | --all-spaces]"))
    }

    @Test func spaceOptionIsOfferedOnlyWhereItApplies() throws {
        #expect(try ferryctl.run(["help", "ls"]).stdout.contains("--space NAME"))
        #expect(try !ferryctl.run(["help", "status"]).stdout.contains("--space NAME"))
    }

    @Test func daemonNotRunningExits4WithAdvice() throws {
        let result = try ferryctl.run(["status", "--socket", nowhere])
        #expect(result.status == 4, "\(result)")
        #expect(result.stderr == "ferryctl: ferryd is not running (no socket at \(nowhere)): "
            + "start it with 'systemctl --user start ferryd' or 'ferryd'\n")
    }

    @Test func aSocketPathThatIsNotASocketIsToldApart() throws {
        let directory = "/tmp/ferryctl-test-notsock-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/plain"
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))

        let intoDirectory = try ferryctl.run(["status", "--socket", directory])
        #expect(intoDirectory.status == 4, "\(intoDirectory)")
        #expect(intoDirectory.stderr.hasPrefix("ferryctl: \(directory) is a directory, not ferryd's socket"), "\(intoDirectory)")
        let intoFile = try ferryctl.run(["status", "--socket", file])
        #expect(intoFile.status == 4, "\(intoFile)")
        #expect(intoFile.stderr.hasPrefix("ferryctl: \(file) is a regular file, not ferryd's socket"), "\(intoFile)")

        // A socket file nobody listens on: ferryd is not running, and how to start it.
        let stale = directory + "/stale.sock"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(stale.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        close(fd)
        let nobody = try ferryctl.run(["status", "--socket", stale])
        #expect(nobody.status == 4, "\(nobody)")
        #expect(nobody.stderr.contains("nobody listens on the socket at \(stale)"), "\(nobody)")
        #expect(nobody.stderr.contains("start it with 'systemctl --user start ferryd'"), "\(nobody)")
    }

    @Test func socketPathComesFromTheEnvironment() throws {
        let fromFerrySocket = try ferryctl.run(["get", "note", "X"], environment: ["FERRY_SOCKET": "/tmp/ferryctl-env/a.sock"])
        #expect(fromFerrySocket.status == 4)
        #expect(fromFerrySocket.stderr.contains("no socket at /tmp/ferryctl-env/a.sock"), "\(fromFerrySocket)")

        let fromRuntime = try ferryctl.run(["get", "note", "X"], environment: ["XDG_RUNTIME_DIR": "/tmp/ferryctl-rt"])
        #expect(fromRuntime.stderr.contains("no socket at /tmp/ferryctl-rt/ferry/ferryd.sock"), "\(fromRuntime)")

        let flagWins = try ferryctl.run(["--socket", "/tmp/ferryctl-flag.sock", "get", "note", "X"],
                                        environment: ["FERRY_SOCKET": "/tmp/ferryctl-env/a.sock"])
        #expect(flagWins.stderr.contains("no socket at /tmp/ferryctl-flag.sock"), "\(flagWins)")

        let fallback = try ferryctl.run(["get", "note", "X"])
        #expect(fallback.stderr.contains("no socket at /run/user/\(getuid())/ferry/ferryd.sock"), "\(fallback)")
    }

    @Test func versionWorksWithoutADaemon() throws {
        let result = try ferryctl.run(["version", "--socket", nowhere])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.hasPrefix("ferryctl 0."), "\(result)")
        #expect(result.stderr.contains("ferryd is not running"), "\(result)")
        let json = try ferryctl.run(["version", "--json", "--socket", nowhere])
        let parsed = try JSONParser.parse(json.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(parsed["ferryctl"]?.stringValue != nil)
        #expect(parsed["ferryd"] == nil)
    }

    @Test func optionsAnywhereAndDoubleDash() throws {
        // Global options before the command, command options before positionals, and "--"
        // letting an id that starts with "-" through: all reach the connect step (exit 4).
        for arguments in [["--json", "--socket", nowhere, "ls", "--limit", "5", "note"],
                          ["get", "--socket=\(nowhere)", "note", "--", "-x"],
                          ["put", "note", "-", "--socket", nowhere, "--attach", "ab"]] {
            let result = try ferryctl.run(arguments, stdin: Array(#"{"a": 1}"#.utf8))
            #expect(result.status == 4, "\(arguments): \(result)")
        }
    }
}
