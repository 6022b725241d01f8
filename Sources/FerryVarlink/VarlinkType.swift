/// A type in the Varlink interface definition language.
public indirect enum VarlinkType: Sendable, Hashable, CustomStringConvertible {
    case bool
    case int
    case float
    case string
    /// Any JSON object (`object`).
    case object
    /// A `type` defined in the same interface, referenced by name.
    case named(String)
    /// `?T`: the field may be absent or `null`.
    case optional(VarlinkType)
    /// `[]T`
    case array(VarlinkType)
    /// `[string]T`: a JSON object with arbitrary keys; `[string]()` is a string set.
    case map(VarlinkType)
    /// `(name: T, ...)`; `()` is the empty struct.
    case `struct`([VarlinkField])
    /// `(one, two, three)`: a string that must be one of the values.
    case `enum`([String])

    /// The IDL spelling, e.g. `?[](first: int, second: string)`.
    public var description: String {
        switch self {
        case .bool: return "bool"
        case .int: return "int"
        case .float: return "float"
        case .string: return "string"
        case .object: return "object"
        case let .named(name): return name
        case let .optional(inner): return "?\(inner)"
        case let .array(inner): return "[]\(inner)"
        case let .map(inner): return "[string]\(inner)"
        case let .struct(fields): return "(" + fields.map(\.description).joined(separator: ", ") + ")"
        case let .enum(values): return "(" + values.joined(separator: ", ") + ")"
        }
    }
}
