/// A parser for configuration files in the systemd INI style: `[Section]` headers,
/// `Key=Value` lines, `#` and `;` comments, blank lines, and a trailing backslash to continue a
/// value on the next line. Pure and size-capped.
public enum INIParser {
    /// One `Key=Value` assignment and where it was.
    public struct Entry: Sendable, Hashable {
        public var section: String
        public var key: String
        public var value: String
        public var line: Int
        /// The line of the `[Section]` header the entry is under: a section that appears twice
        /// has two.
        public var sectionLine: Int = 0
    }

    /// Why a file could not be parsed.
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    /// The largest configuration file accepted.
    public static let maxBytes = 1 << 20

    /// Parses `text` into its entries, in file order.
    /// - Throws: `Failure` with the line number for a line that is neither a section header,
    ///   an assignment, a comment nor blank; for an entry outside any section; for a file over
    ///   `maxBytes`.
    /// Lines end in LF or CRLF; a UTF-8 byte order mark before the first is skipped.
    public static func parse(_ text: String) throws(Failure) -> [Entry] {
        if text.utf8.count > maxBytes { throw Failure(line: 1, message: "the file is larger than \(maxBytes) bytes, the most a config file may hold") }
        var entries: [Entry] = []
        var section: String?
        var sectionLine = 0
        var pending: (key: String, value: String, line: Int)?
        var number = 0
        // "\r\n" is one Character in Swift: split on both.
        let body = text.hasPrefix("\u{FEFF}") ? Substring(text.dropFirst()) : Substring(text)
        for raw in body.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            number += 1
            var line = Substring(raw)
            if line.hasSuffix("\r") { line = line.dropLast() }
            if var continued = pending {
                let trimmed = line.trimmingWhitespace()
                if trimmed.hasSuffix("\\") {
                    continued.value += " " + trimmed.dropLast().trimmingWhitespace()
                    pending = continued
                } else {
                    continued.value += " " + trimmed
                    entries.append(Entry(section: section ?? "", key: continued.key, value: continued.value.trimmingWhitespace(), line: continued.line,
                                         sectionLine: sectionLine))
                    pending = nil
                }
                continue
            }
            let trimmed = line.trimmingWhitespace()
            if trimmed.isEmpty || trimmed.hasPrefix("#") || trimmed.hasPrefix(";") { continue }
            if trimmed.hasPrefix("[") {
                guard trimmed.hasSuffix("]"), trimmed.count > 2 else {
                    throw Failure(line: number, message: "a section header looks like [Name]")
                }
                section = String(trimmed.dropFirst().dropLast())
                sectionLine = number
                continue
            }
            guard let eq = trimmed.firstIndex(of: "=") else {
                throw Failure(line: number, message: "expected Key=Value, a [Section] header or a comment")
            }
            let key = String(trimmed[..<eq]).trimmingWhitespace()
            var value = String(trimmed[trimmed.index(after: eq)...]).trimmingWhitespace()
            guard !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }) else {
                throw Failure(line: number, message: "invalid key \"\(key.prefix(64))\"")
            }
            guard let current = section else {
                throw Failure(line: number, message: "\(key)= must be inside a [Section]")
            }
            if value.hasSuffix("\\") {
                value.removeLast()
                pending = (key, value.trimmingWhitespace(), number)
                continue
            }
            entries.append(Entry(section: current, key: key, value: value, line: number, sectionLine: sectionLine))
        }
        if let pending {
            entries.append(Entry(section: section ?? "", key: pending.key, value: pending.value, line: pending.line, sectionLine: sectionLine))
        }
        return entries
    }
}

extension StringProtocol {
    func trimmingWhitespace() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}
