import Foundation

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
             the connection broke, a local file could not be read or written, or an
             import left out data (of an owner no space here has, or that did not
             open or verify)
          2  usage error: the command line is wrong
          3  not found: get, rm or conflicts of an unknown record; an unknown losing
             version (--restore), attachment (detach) or transport (transport rm)
          4  ferryd is not running: no socket at the path, nobody listens on it, or the
             path is not a socket (a directory or a regular file); 'version' still
             exits 0, saying so
          5  permission denied: the socket admits only the user ferryd runs as
             (and root)
        """

    /// `ferryctl help`.
    /// Fits in 80 columns: each command's usage is at most `maxUsage` characters (longer
    /// ones are shortened, see `shortUsage`) and the summaries wrap beside them.
    static func overview() -> String {
        let commands = Ferryctl.commands.map { command -> (String, String) in
            let usage = command.synopsis.isEmpty ? command.name : command.name + " " + command.synopsis
            return (usage.count > maxUsage ? shortUsage(command) : usage, command.summary)
        }
        // `--version` works only in place of a command (Ferryctl.main), so it is listed here,
        // not among the options every command takes.
        let globals = Ferryctl.globalOptions.map { ($0.display, $0.help) }
            + [("-V, --version", "in place of a command: print the versions of ferryctl and ferryd, as 'ferryctl version' does")]
        // The commands that act on one space, from their own declarations.
        var spaced: [String] = []
        for command in Ferryctl.commands where command.takesSpace { spaced.append(command.name) }
        let spacedText = spaced.dropLast().joined(separator: ", ") + (spaced.count > 1 ? " and " : "") + (spaced.last ?? "")
        return """
            usage: ferryctl [--socket PATH] [--json] [--space NAME] COMMAND [ARGUMENTS]

            ferryctl talks to ferryd, the Ferry sync daemon, over its Unix socket.

            \(columns(commands))
            Global options (before or after the command):
            \(columns(globals))
            \(reflow("--space applies to the commands that act on one space: \(spacedText). An argument that starts with - (an id, say) goes after --: 'ferryctl get note -- -x'."))

            \(exitCodes)

            'ferryctl help COMMAND' shows a command's options.

            """
    }

    /// The longest usage the overview shows in full.
    static let maxUsage = 33

    /// A long usage made short: the first word of each alternative (`transport ls | add | rm`),
    /// else cut before its options (`ls ENTITY [options]`), else the bare name.
    private static func shortUsage(_ command: any Command.Type) -> String {
        let alternatives = topLevelAlternatives(command.synopsis).compactMap { $0.split(separator: " ").first }
        if alternatives.count > 1 && !command.synopsis.hasPrefix("[") {
            var seen = Set<Substring>()
            let words = alternatives.filter { seen.insert($0).inserted }
            let usage = command.name + " " + words.joined(separator: " | ")
            if usage.count <= maxUsage { return usage }
        }
        var words: [Substring] = [Substring(command.name)]
        for word in command.synopsis.split(separator: " ") {
            if word.hasPrefix("[-") { break }
            words.append(word)
        }
        let usage = words.joined(separator: " ") + " [options]"
        return usage.count <= maxUsage ? usage : command.name + " ..."
    }

    /// `ferryctl help COMMAND` and `ferryctl COMMAND --help`.
    static func help(for command: any Command.Type) -> String {
        var text = usage(command) + "\n"
        text += wrap(command.summary.prefix(1).uppercased() + command.summary.dropFirst() + ".", 80).joined(separator: "\n") + "\n"
        if !command.details.isEmpty { text += "\n" + reflow(command.details) + "\n" }
        var options = command.options.map { ($0.display, $0.help) }
        for option in Ferryctl.globalOptions where option.name != "space" || command.takesSpace {
            options.append((option.display, option.help))
        }
        text += "\nOptions:\n" + columns(options)
        return text
    }

    /// `usage: ferryctl NAME SYNOPSIS` within 80 columns: a synopsis of alternatives that does
    /// not fit gets one line per alternative, and a long one is wrapped under itself.
    private static func usage(_ command: any Command.Type) -> String {
        let head = "usage: ferryctl \(command.name)"
        let whole = head + (command.synopsis.isEmpty ? "" : " " + command.synopsis)
        if whole.count <= 80 { return whole + "\n" }
        let indent = String(repeating: " ", count: "usage: ".count)
        var lines: [String] = []
        for (i, alternative) in topLevelAlternatives(command.synopsis).enumerated() {
            let lead = (i == 0 ? "usage: " : indent) + "ferryctl \(command.name) "
            let room = 80 - lead.count
            for (j, line) in wrap(groups(alternative), room).enumerated() {
                lines.append((j == 0 ? lead : String(repeating: " ", count: lead.count)) + line)
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The words of a synopsis, a bracketed or parenthesized group counting as one, so that a
    /// wrapped usage never breaks inside `[--where FIELD=VALUE ...]`.
    private static func groups(_ synopsis: String) -> [String] {
        split(synopsis, at: " ").filter { !$0.isEmpty }
    }

    /// `text` with each paragraph (lines that do not start with a space, up to a blank line)
    /// wrapped again at 80 columns; indented lines (lists, examples) are kept as they are.
    static func reflow(_ text: String, width: Int = 80) -> String {
        var out: [String] = []
        var paragraph: [String] = []
        func flush() {
            if !paragraph.isEmpty { out += wrap(paragraph.joined(separator: " "), width) }
            paragraph = []
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty || line.first == " " {
                flush()
                out.append(String(line))
            } else {
                paragraph.append(String(line))
            }
        }
        flush()
        return out.joined(separator: "\n")
    }

    /// `synopsis` split at the `|` that are outside brackets and parentheses:
    /// `ls | add NAME relay URL (--code CODE | --token TOKEN)` is two alternatives.
    private static func topLevelAlternatives(_ synopsis: String) -> [String] {
        // " | " separates alternatives; a bar without spaces ("JSON|-") is one argument's choice.
        // Bars inside a group stay in it, as they were written.
        split(synopsis.replacingOccurrences(of: " | ", with: "\u{1}"), at: "\u{1}")
            .map { $0.replacingOccurrences(of: "\u{1}", with: " | ") }
    }

    /// `text` split at each `separator` outside brackets and parentheses, each part trimmed.
    private static func split(_ text: String, at separator: Character) -> [String] {
        var parts: [String] = []
        var current = ""
        var depth = 0
        for character in text {
            switch character {
            case "(", "[": depth += 1
            case ")", "]": depth -= 1
            case separator where depth == 0:
                parts.append(current.trimmingCharacters(in: .whitespaces))
                current = ""
                continue
            default: break
            }
            current.append(character)
        }
        parts.append(current.trimmingCharacters(in: .whitespaces))
        return parts
    }

    /// Rows of two columns, indented by two spaces, the second column wrapped at spaces so
    /// that no line passes `width` columns (unless a single word is longer than the room).
    static func columns(_ rows: [(String, String)], width: Int = 80) -> String {
        let first = rows.map(\.0.count).max() ?? 0
        let indent = 2, gap = 2
        let room = max(20, width - indent - first - gap)
        var text = ""
        for (left, right) in rows {
            let lines = wrap(right, room)
            text += String(repeating: " ", count: indent) + left
            if let line = lines.first { text += String(repeating: " ", count: first - left.count + gap) + line }
            text += "\n"
            for line in lines.dropFirst() { text += String(repeating: " ", count: indent + first + gap) + line + "\n" }
        }
        return text
    }

    /// `text` in lines of at most `room` characters, broken at spaces.
    private static func wrap(_ text: String, _ room: Int) -> [String] {
        wrap(text.split(separator: " ").map(String.init), room)
    }

    /// `words` joined by spaces in lines of at most `room` characters (a longer word gets a
    /// line of its own).
    private static func wrap(_ words: [String], _ room: Int) -> [String] {
        var lines: [String] = []
        var current = ""
        for word in words {
            if current.isEmpty {
                current = String(word)
            } else if current.count + 1 + word.count <= room {
                current += " " + word
            } else {
                lines.append(current)
                current = String(word)
            }
        }
        if !current.isEmpty { lines.append(current) }
        return lines
    }
}
