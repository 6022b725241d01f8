/// One option a command accepts, as written on the command line.
struct OptionSpec: Sendable {
    /// The long name without dashes: `limit` for `--limit`.
    let name: String
    /// A one-letter alias (`o` for `-o`), if any.
    let short: Character?
    /// The value's placeholder in help (`N`, `FILE`); nil for a flag that takes no value.
    let valueName: String?
    /// Whether it may be given more than once (`--where a=1 --where b=2`).
    let repeatable: Bool
    /// One line for `ferryctl help COMMAND`.
    let help: String

    init(_ name: String, short: Character? = nil, value: String? = nil, repeatable: Bool = false, help: String) {
        self.name = name
        self.short = short
        self.valueName = value
        self.repeatable = repeatable
        self.help = help
    }

    var takesValue: Bool { valueName != nil }

    /// How help shows it: `-o, --output FILE`.
    var display: String {
        var text = short.map { "-\($0), " } ?? ""
        text += "--" + name
        if let valueName { text += " " + valueName }
        return text
    }
}

/// A command line split into positional arguments and options.
struct ParsedArguments: Sendable, Equatable {
    /// The positional arguments, in order (the command's name not included).
    var positionals: [String] = []
    /// Every value of each option that takes one, in order; keyed by long name.
    var values: [String: [String]] = [:]
    /// The flags given (options without a value), by long name.
    var flags: Set<String> = []

    /// The value of a single-valued option, if given.
    func value(_ name: String) -> String? { values[name]?.last }

    /// All values of a repeatable option (empty when not given).
    func all(_ name: String) -> [String] { values[name] ?? [] }

    /// Whether a flag or an option was given.
    func has(_ name: String) -> Bool { flags.contains(name) || values[name] != nil }
}

/// A command line that does not fit the command's syntax. Exit code 2.
struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}

/// Splits command lines by a list of `OptionSpec`. Pure: it reads nothing but its input.
///
/// Options may come before, between or after positional arguments. `--name value` and
/// `--name=value` are the same; `-o value` for a short alias. `--` ends the options, so
/// every later argument is positional; a lone `-` (stdin) is positional.
enum ArgumentParser {
    /// Parses `arguments` with `options`.
    /// - Throws: `UsageError` for an unknown option, a missing value, a value given to a
    ///   flag, or a second value of an option that is not repeatable.
    static func parse(_ arguments: [String], options: [OptionSpec], command: String) throws(UsageError) -> ParsedArguments {
        var result = ParsedArguments()
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                result.positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            let (spec, inlineValue) = try lookup(argument, options: options, command: command)
            guard spec.takesValue else {
                if inlineValue != nil { throw UsageError("--\(spec.name) takes no value") }
                result.flags.insert(spec.name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                guard index < arguments.count else {
                    throw UsageError("\(argument) needs a value (\(spec.display))")
                }
                value = arguments[index]
                index += 1
            }
            if !spec.repeatable && result.values[spec.name] != nil {
                throw UsageError("--\(spec.name) is given more than once")
            }
            result.values[spec.name, default: []].append(value)
        }
        return result
    }

    /// The spec an option argument names, and its `=value` if written inline.
    private static func lookup(_ argument: String, options: [OptionSpec],
                               command: String) throws(UsageError) -> (OptionSpec, String?) {
        let unknown = UsageError("unknown option \(argument.split(separator: "=").first.map(String.init) ?? argument)"
            + (command.isEmpty ? "" : " for '\(command)'"))
        if argument.hasPrefix("--") {
            let body = argument.dropFirst(2)
            let name: Substring
            var inline: String?
            if let equals = body.firstIndex(of: "=") {
                name = body[..<equals]
                inline = String(body[body.index(after: equals)...])
            } else {
                name = body
            }
            guard let spec = options.first(where: { $0.name == name }) else { throw unknown }
            return (spec, inline)
        }
        // "-o" or "-oVALUE".
        let body = argument.dropFirst()
        guard let letter = body.first, let spec = options.first(where: { $0.short == letter }) else { throw unknown }
        let rest = body.dropFirst()
        if rest.isEmpty { return (spec, nil) }
        guard spec.takesValue else { throw unknown }
        return (spec, String(rest))
    }

    /// The index of the first positional argument in `arguments` when only `options` are
    /// known (the global ones): where the command's name is. Nil when there is none.
    static func firstPositional(_ arguments: [String], options: [OptionSpec]) -> Int? {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" { return index + 1 < arguments.count ? index + 1 : nil }
            if argument == "-" || !argument.hasPrefix("-") { return index }
            index += 1
            // Skip the value of a known option written as "--name value" or "-o value".
            if let spec = options.first(where: { argument == "--" + $0.name || ($0.short.map { argument == "-\($0)" } ?? false) }),
               spec.takesValue {
                index += 1
            }
        }
        return nil
    }
}

extension ParsedArguments {
    /// An option's value as an integer, or nil when not given.
    /// - Throws: `UsageError` when it is not an integer within `range`.
    func integer(_ name: String, in range: ClosedRange<Int64> = Int64.min...Int64.max) throws(UsageError) -> Int64? {
        guard let text = value(name) else { return nil }
        guard let number = Int64(text), range.contains(number) else {
            let bounds = range.upperBound == Int64.max ? "at least \(range.lowerBound)" : "\(range.lowerBound) to \(range.upperBound)"
            throw UsageError("--\(name) must be an integer, \(bounds) (got \"\(text)\")")
        }
        return number
    }

    /// Checks the number of positional arguments.
    /// - Throws: `UsageError` naming what is missing or extra.
    func expectPositionals(_ names: [String], optional: Int = 0) throws(UsageError) {
        let required = names.count - optional
        if positionals.count < required {
            throw UsageError("missing \(names[positionals.count])")
        }
        if positionals.count > names.count {
            throw UsageError("unexpected argument \"\(positionals[names.count])\"")
        }
    }
}
