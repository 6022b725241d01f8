// Typed views of a value. Each returns nil (or false) when the value is of another kind,
// so callers can write `guard let id = payload["id"]?.stringValue else { ... }`.

extension JSONValue {
    /// The member named `key` when this is an object that has it; nil otherwise.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self {
            return members[key]
        }
        return nil
    }

    /// The text of a `.string`; nil otherwise.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The value of an `.int`, or of a `.double` whose value is an integer that
    /// `Int64` represents exactly (`3.0` gives 3, `3.5` and `1e300` give nil).
    public var intValue: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d): return Int64(exactly: d)
        default: return nil
        }
    }

    /// The value of a `.double`, or of an `.int` converted to the nearest `Double`.
    public var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// The value of a `.bool`; nil otherwise.
    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    /// The elements of an `.array`; nil otherwise.
    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// The members of an `.object`; nil otherwise.
    public var objectValue: [String: JSONValue]? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// Whether this is `.null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The kind's name for error messages: "null", "bool", "int", "double",
    /// "string", "array" or "object".
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "bool"
        case .int: return "int"
        case .double: return "double"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }
}
