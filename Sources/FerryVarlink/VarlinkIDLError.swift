/// Why an interface definition could not be parsed, with the 1-based line and column of
/// the offending byte.
public struct VarlinkIDLError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// The text ended where more was required.
        case unexpectedEnd
        /// Something other than what the grammar allows here.
        case unexpected(expected: String)
        /// The interface name is not a reverse-domain name.
        case invalidInterfaceName(String)
        /// A type, method or error name is not `[A-Z][A-Za-z0-9]*`.
        case invalidMemberName(String)
        /// A field or enum value name is not `[A-Za-z](_?[A-Za-z0-9])*`.
        case invalidFieldName(String)
        /// Two types, methods or errors share a name (they share one namespace).
        case duplicateMember(String)
        /// Two fields (or enum values) of one struct share a name.
        case duplicateField(String)
        /// `??T`
        case doubleOptional
        /// A named type that the interface does not define.
        case unknownType(String)
        /// The interface defines no method, type or error.
        case noMembers
    }

    public var kind: Kind
    public var line: Int
    public var column: Int

    public init(kind: Kind, line: Int, column: Int) {
        self.kind = kind
        self.line = line
        self.column = column
    }

    public var description: String {
        let what: String
        switch kind {
        case .unexpectedEnd: what = "unexpected end of interface definition"
        case let .unexpected(expected): what = "expected \(expected)"
        case let .invalidInterfaceName(name): what = "invalid interface name \"\(name)\""
        case let .invalidMemberName(name): what = "invalid type, method or error name \"\(name)\""
        case let .invalidFieldName(name): what = "invalid field name \"\(name)\""
        case let .duplicateMember(name): what = "\"\(name)\" is defined twice"
        case let .duplicateField(name): what = "field \"\(name)\" appears twice"
        case .doubleOptional: what = "a type cannot be optional twice (\"??\")"
        case let .unknownType(name): what = "unknown type \"\(name)\""
        case .noMembers: what = "the interface defines no members"
        }
        return "\(line):\(column): \(what)"
    }
}
