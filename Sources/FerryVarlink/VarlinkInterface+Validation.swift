import FerryJSON

extension VarlinkInterface {
    /// Checks call parameters against a method's input struct.
    ///
    /// A parameter is invalid when a non-optional field is missing or `null`, when a
    /// value does not have the declared type (recursively, through named types, arrays,
    /// maps, structs and enums), or when the object has a field the method does not
    /// declare. Unknown fields are rejected like the Python reference server does: the
    /// spec puts vendor extensions in the call object, not in `parameters`.
    ///
    /// - Returns: `nil` when valid, else the name of the first invalid top-level
    ///   parameter: declared fields in declaration order, then unknown ones sorted.
    public func invalidParameter(in parameters: [String: JSONValue], for fields: [VarlinkField]) -> String? {
        // Checked for every call and every element of every array of structs: no allocation
        // on the valid path.
        var declaredPresent = 0
        for field in fields {
            let value = parameters[field.name]
            if value != nil { declaredPresent += 1 }
            if !matches(value, field.type) { return field.name }
        }
        if parameters.count > declaredPresent {
            return parameters.keys.filter { key in !fields.contains { $0.name == key } }.sorted().first
        }
        return nil
    }

    /// Whether `value` (absent when `nil`) conforms to `type`.
    public func matches(_ value: JSONValue?, _ type: VarlinkType) -> Bool {
        guard let value, !value.isNull else {
            if case .optional = type { return true }
            return false
        }
        switch type {
        case .optional(let inner):
            return matches(value, inner)
        case .bool:
            if case .bool = value { return true }
            return false
        case .int:
            if case .int = value { return true }
            return false
        case .float:
            switch value {
            case .int, .double: return true
            default: return false
            }
        case .string:
            if case .string = value { return true }
            return false
        case .object:
            if case .object = value { return true }
            return false
        case .named(let name):
            guard let definition = types[name] else { return false }
            return matches(value, definition)
        case .array(let element):
            guard case let .array(items) = value else { return false }
            return items.allSatisfy { matches($0, element) }
        case .map(let element):
            guard case let .object(entries) = value else { return false }
            return entries.values.allSatisfy { matches($0, element) }
        case .struct(let fields):
            guard case let .object(object) = value else { return false }
            return invalidParameter(in: object, for: fields) == nil
        case .enum(let values):
            guard case let .string(string) = value else { return false }
            return values.contains(string)
        }
    }
}
