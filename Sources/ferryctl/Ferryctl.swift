import FerryClient

/// The command line tool: global options, the command table, dispatch and exit codes.
enum Ferryctl {
    /// Every command, in the order `help` lists them.
    static let commands: [any Command.Type] = [
        StatusCommand.self, GetCommand.self, PutCommand.self, RmCommand.self, LsCommand.self,
        WatchCommand.self, ConflictsCommand.self, AttachCommand.self, DetachCommand.self,
        OutboxCommand.self, SyncCommand.self, SpaceCommand.self, TransportCommand.self, OwnerCommand.self, RelayCommand.self,
        ExportCommand.self, ImportCommand.self, VersionCommand.self, HelpCommand.self,
    ]

    /// The options every command accepts.
    static let globalOptions: [OptionSpec] = [
        OptionSpec("socket", value: "PATH",
                   help: "ferryd's socket (default: $FERRY_SOCKET, else $XDG_RUNTIME_DIR/ferry/ferryd.sock)"),
        OptionSpec("json", help: "print the daemon's replies as JSON, one document per line, for scripts"),
        OptionSpec("space", value: "NAME", repeatable: true,
                   help: "the space of the records (default: the private space; watch takes several)"),
        OptionSpec("help", short: "h", help: "show help for the command"),
    ]

    /// The command named `name`, if there is one.
    static func command(named name: String) -> (any Command.Type)? {
        commands.first { $0.name == name }
    }

    /// Runs the command line `arguments` (without the program name) and returns the exit code.
    static func main(_ arguments: [String]) async -> ExitCode {
        guard let commandIndex = ArgumentParser.firstPositional(arguments, options: globalOptions) else {
            // No command: `ferryctl --help` is help, `ferryctl --version` (or -V) the version command;
            // anything else is a usage error.
            if arguments.contains("--help") || arguments.contains("-h") {
                Output.out(HelpCommand.overview())
                return .ok
            }
            if arguments.contains("--version") || arguments.contains("-V") {
                return await main(arguments.filter { $0 != "--version" && $0 != "-V" } + ["version"])
            }
            if let problem = missingOptionValue(arguments) {
                Output.note("ferryctl: \(problem)\nusage: ferryctl [--socket PATH] [--json] [--space NAME] COMMAND [ARGUMENTS]\nsee 'ferryctl help'")
                return .usage
            }
            Output.note("ferryctl: missing command\n\n" + HelpCommand.overview())
            return .usage
        }
        let name = arguments[commandIndex]
        guard let command = command(named: name) else {
            Output.note("ferryctl: unknown command '\(name)'; see 'ferryctl help' for the list")
            return .usage
        }
        var rest = arguments
        rest.remove(at: commandIndex)
        do throws(CommandFailure) {
            let parsed: ParsedArguments
            do {
                parsed = try ArgumentParser.parse(rest, options: globalOptions + command.options, command: name)
            } catch {
                throw CommandFailure(error)
            }
            if parsed.flags.contains("help") {
                Output.out(HelpCommand.help(for: command))
                return .ok
            }
            let spaces = parsed.all("space")
            if !spaces.isEmpty && !command.takesSpace {
                throw .usage("--space does not apply to '\(name)'")
            }
            if spaces.count > 1 && !command.takesSeveralSpaces {
                throw .usage("--space is given more than once (only 'watch' follows several spaces)")
            }
            let context = Context(socketPath: parsed.value("socket") ?? FerryClient.defaultSocketPath(),
                                  json: parsed.flags.contains("json"), spaces: spaces)
            try await command.run(parsed, context)
            return .ok
        } catch {
            report(error, command: command)
            return error.exitCode
        }
    }

    /// When no command was found because a global option lacks its value, what to say:
    /// `--socket needs a path` for a trailing `--socket`, or for `--socket status` that the
    /// command was taken as the path. Nil when the command is simply missing.
    static func missingOptionValue(_ arguments: [String]) -> String? {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard let spec = globalOptions.first(where: { argument == "--" + $0.name || ($0.short.map { argument == "-\($0)" } ?? false) }),
                  let valueName = spec.valueName else { continue }
            let needs = "\(argument) needs a \(valueName.lowercased())"
            guard index < arguments.count else { return needs }
            if command(named: arguments[index]) != nil {
                return needs + " before the command ('\(arguments[index])' was taken as the \(valueName.lowercased()))"
            }
            index += 1
        }
        return nil
    }

    /// Prints a failure to stderr; a usage error also gets the command's synopsis.
    static func report(_ failure: CommandFailure, command: any Command.Type) {
        var text = "ferryctl: " + failure.message
        if case .usage = failure {
            text += "\nusage: ferryctl \(command.name)" + (command.synopsis.isEmpty ? "" : " " + command.synopsis)
                + "\nsee 'ferryctl help \(command.name)'"
        }
        Output.note(text)
    }
}
