/// Recursive-descent parser for the Varlink interface definition language.
///
/// Grammar (varlink.org, "Interface Definition"): `interface NAME` followed by members
/// `type Name (...)`, `method Name (...) -> (...)`, `error Name (...)`; whitespace and
/// `#` comments to the end of the line may appear between any two tokens. Recursion is
/// bounded by `maxNesting`, so hostile definitions cannot exhaust the stack.
struct VarlinkIDLParser {
    private let text: [UInt8]
    private var position = 0
    private let maxNesting = 64

    init(_ text: String) {
        self.text = Array(text.utf8)
    }

    /// Parses a whole interface definition.
    /// - Throws: `VarlinkIDLError` at the first offending token.
    mutating func parse(description: String) throws(VarlinkIDLError) -> VarlinkInterface {
        skipTrivia()
        try expectWord("interface")
        let nameStart = position
        let name = try word(what: "an interface name")
        guard VarlinkNames.isInterfaceName(name) else {
            throw error(.invalidInterfaceName(name), at: nameStart)
        }

        var types: [String: VarlinkType] = [:]
        var methods: [String: VarlinkMethodSignature] = [:]
        var errors: [String: [VarlinkField]] = [:]
        var memberOrder: [String] = []
        var references: [(name: String, offset: Int)] = []

        while true {
            skipTrivia()
            if position == text.count { break }
            let keywordStart = position
            let keyword = try word(what: "\"type\", \"method\" or \"error\"")
            skipTrivia()
            let memberNameStart = position
            let memberName = try word(what: "a member name")
            guard VarlinkNames.isMemberName(memberName) else {
                throw error(.invalidMemberName(memberName), at: memberNameStart)
            }
            if memberOrder.contains(memberName) {
                throw error(.duplicateMember(memberName), at: memberNameStart)
            }
            switch keyword {
            case "type":
                types[memberName] = try parseParenthesized(depth: 0, references: &references)
            case "method":
                let input = try parseStruct(depth: 0, references: &references)
                skipTrivia()
                try expect("->")
                let output = try parseStruct(depth: 0, references: &references)
                methods[memberName] = VarlinkMethodSignature(name: memberName, input: input, output: output)
            case "error":
                errors[memberName] = try parseStruct(depth: 0, references: &references)
            default:
                throw error(.unexpected(expected: "\"type\", \"method\" or \"error\""), at: keywordStart)
            }
            memberOrder.append(memberName)
        }
        guard !memberOrder.isEmpty else { throw error(.noMembers, at: position) }
        for reference in references where types[reference.name] == nil {
            throw error(.unknownType(reference.name), at: reference.offset)
        }
        return VarlinkInterface(
            name: name, description: description, types: types, methods: methods, errors: errors,
            memberNames: memberOrder)
    }

    // MARK: - Types

    private mutating func parseStruct(
        depth: Int, references: inout [(name: String, offset: Int)]
    ) throws(VarlinkIDLError) -> [VarlinkField] {
        let start = position
        let parsed = try parseParenthesized(depth: depth, references: &references)
        switch parsed {
        case let .struct(fields): return fields
        default: throw error(.unexpected(expected: "a struct of \"name: type\" fields"), at: start)
        }
    }

    /// `( )`, `(a: T, b: U)` (a struct) or `(a, b)` (an enum).
    private mutating func parseParenthesized(
        depth: Int, references: inout [(name: String, offset: Int)]
    ) throws(VarlinkIDLError) -> VarlinkType {
        guard depth < maxNesting else { throw error(.unexpected(expected: "less nesting"), at: position) }
        skipTrivia()
        try expect("(")
        skipTrivia()
        if peek() == UInt8(ascii: ")") {
            position += 1
            return .struct([])
        }
        var fields: [VarlinkField] = []
        var values: [String] = []
        var isEnum: Bool?
        var names: Set<String> = []
        while true {
            skipTrivia()
            let nameStart = position
            let name = try word(what: "a field name")
            guard VarlinkNames.isFieldName(name) else { throw error(.invalidFieldName(name), at: nameStart) }
            guard names.insert(name).inserted else { throw error(.duplicateField(name), at: nameStart) }
            skipTrivia()
            let hasType = peek() == UInt8(ascii: ":")
            if let isEnum, isEnum == hasType {
                throw error(.unexpected(expected: isEnum ? "\",\" or \")\"" : "\":\""), at: position)
            }
            isEnum = !hasType
            if hasType {
                position += 1
                let type = try parseType(depth: depth + 1, afterOptional: false, references: &references)
                fields.append(VarlinkField(name: name, type: type))
            } else {
                values.append(name)
            }
            skipTrivia()
            guard let next = peek() else { throw error(.unexpectedEnd, at: position) }
            position += 1
            if next == UInt8(ascii: ")") { break }
            guard next == UInt8(ascii: ",") else {
                throw error(.unexpected(expected: "\",\" or \")\""), at: position - 1)
            }
        }
        return isEnum == true ? .enum(values) : .struct(fields)
    }

    private mutating func parseType(
        depth: Int, afterOptional: Bool, references: inout [(name: String, offset: Int)]
    ) throws(VarlinkIDLError) -> VarlinkType {
        guard depth < maxNesting else { throw error(.unexpected(expected: "less nesting"), at: position) }
        skipTrivia()
        let start = position
        guard let byte = peek() else { throw error(.unexpectedEnd, at: position) }
        switch byte {
        case UInt8(ascii: "?"):
            if afterOptional { throw error(.doubleOptional, at: start) }
            position += 1
            return .optional(try parseType(depth: depth + 1, afterOptional: true, references: &references))
        case UInt8(ascii: "["):
            if consume("[]") {
                return .array(try parseType(depth: depth + 1, afterOptional: false, references: &references))
            }
            if consume("[string]") {
                return .map(try parseType(depth: depth + 1, afterOptional: false, references: &references))
            }
            throw error(.unexpected(expected: "\"[]\" or \"[string]\""), at: start)
        case UInt8(ascii: "("):
            return try parseParenthesized(depth: depth + 1, references: &references)
        default:
            let name = try word(what: "a type")
            switch name {
            case "bool": return .bool
            case "int": return .int
            case "float": return .float
            case "string": return .string
            case "object": return .object
            default:
                guard VarlinkNames.isMemberName(name) else {
                    throw error(.unexpected(expected: "a type"), at: start)
                }
                references.append((name, start))
                return .named(name)
            }
        }
    }

    // MARK: - Tokens

    private func peek() -> UInt8? {
        position < text.count ? text[position] : nil
    }

    /// Skips spaces, tabs, newlines and `#` comments.
    private mutating func skipTrivia() {
        while position < text.count {
            switch text[position] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                position += 1
            case UInt8(ascii: "#"):
                while position < text.count && text[position] != UInt8(ascii: "\n") { position += 1 }
            default:
                return
            }
        }
    }

    /// A run of name characters: letters, digits, `_`, `-` and `.`.
    private mutating func word(what: String) throws(VarlinkIDLError) -> String {
        let start = position
        while position < text.count {
            let byte = text[position]
            guard VarlinkNames.isAlphanumeric(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: ".")
            else { break }
            position += 1
        }
        guard position > start else {
            throw error(position == text.count ? .unexpectedEnd : .unexpected(expected: what), at: start)
        }
        return String(decoding: text[start..<position], as: UTF8.self)
    }

    private mutating func expectWord(_ expected: String) throws(VarlinkIDLError) {
        let start = position
        let found = try word(what: "\"\(expected)\"")
        guard found == expected else { throw error(.unexpected(expected: "\"\(expected)\""), at: start) }
        skipTrivia()
    }

    private mutating func consume(_ token: String) -> Bool {
        let bytes = Array(token.utf8)
        guard position + bytes.count <= text.count, Array(text[position..<position + bytes.count]) == bytes else {
            return false
        }
        position += bytes.count
        return true
    }

    private mutating func expect(_ token: String) throws(VarlinkIDLError) {
        guard consume(token) else {
            throw error(position == text.count ? .unexpectedEnd : .unexpected(expected: "\"\(token)\""), at: position)
        }
    }

    private func error(_ kind: VarlinkIDLError.Kind, at offset: Int) -> VarlinkIDLError {
        var line = 1
        var column = 1
        for byte in text[0..<min(offset, text.count)] {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }
        return VarlinkIDLError(kind: kind, line: line, column: column)
    }
}
