/// `ferryctl help [COMMAND]`: the command list, global options and exit codes, or one
/// command's usage.
enum HelpCommand: Command {
    static let name = "help"
    static let synopsis = "[COMMAND]"
    static let summary = "show this help, or a command's options"

    static func run(_ arguments: ParsedArguments, _ context: Context) async throws(CommandFailure) {
        let positionals = try arguments.positionals(["COMMAND"], optional: 1)
        guard let name = positionals.first else {
            Output.out(overview())
            return
        }
        guard let command = Ferryctl.command(named: name) else {
            throw .usage("unknown command '\(name)'; 'ferryctl help' lists them")
        }
        Output.out(help(for: command))
    }

    /// The exit codes, as scripts may rely on them.
    static let exitCodes = """
        Exit codes:
          0  success
          1  ferryd reported an error (its name and message are printed to stderr),
             the connection broke, or a local file could not be read or written
          2  usage error: the command line is wrong
          3  not found: get, rm or conflicts of an unknown record; an unknown losing
             version (--restore) or attachment (detach)
          4  ferryd is not running: no socket at the path, or the connection was refused
          5  permission denied: the socket admits only the user ferryd runs as (and root)
        """

    /// `ferryctl help`.
    static func overview() -> String {
        var commands = Table("COMMAND", "")
        for command in Ferryctl.commands {
            let usage = command.synopsis.isEmpty ? command.name : command.name + " " + command.synopsis
            commands.add(usage.count > 42 ? shortUsage(command) : usage, command.summary)
        }
        var globals = Table("", "")
        for option in Ferryctl.globalOptions {
            globals.add(option.display, option.help)
        }
        return """
            usage: ferryctl [--socket PATH] [--json] [--space NAME] COMMAND [ARGUMENTS]

            ferryctl talks to ferryd, the Ferry sync daemon, over its Unix socket.

            \(indentRows(commands))
            Global options (before or after the command):
            \(indentRows(globals))
            --space applies to the commands that touch records: get, put, rm, ls, watch,
            conflicts, outbox and sync. An argument that starts with - (an id, say) goes
            after --: 'ferryctl get note -- -x'.

            \(exitCodes)

            'ferryctl help COMMAND' shows a command's options.

            """
    }

    /// A long usage cut before its options: `ls ENTITY [options]`.
    private static func shortUsage(_ command: any Command.Type) -> String {
        var words: [Substring] = [Substring(command.name)]
        for word in command.synopsis.split(separator: " ") {
            if word.hasPrefix("[-") { break }
            words.append(word)
        }
        return words.joined(separator: " ") + " [options]"
    }

    /// `ferryctl help COMMAND` and `ferryctl COMMAND --help`.
    static func help(for command: any Command.Type) -> String {
        var text = "usage: ferryctl \(command.name)" + (command.synopsis.isEmpty ? "" : " " + command.synopsis) + "\n\n"
        text += command.summary.prefix(1).uppercased() + command.summary.dropFirst() + ".\n"
        if !command.details.isEmpty { text += "\n" + command.details + "\n" }
        var options = Table("", "")
        for option in command.options { options.add(option.display, option.help) }
        for option in Ferryctl.globalOptions where option.name != "space" || command.takesSpace {
            options.add(option.display, option.help)
        }
        text += "\nOptions:\n" + indentRows(options)
        return text
    }

    /// A table's rows (not its header), indented by two spaces.
    private static func indentRows(_ table: Table) -> String {
        table.render().split(separator: "\n", omittingEmptySubsequences: false).dropFirst()
            .filter { !$0.isEmpty }
            .map { "  " + $0 }
            .joined(separator: "\n") + "\n"
    }
}
