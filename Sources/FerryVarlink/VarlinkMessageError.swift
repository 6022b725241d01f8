import FerryJSON

/// Why a framed message is not a valid Varlink call or reply.
public enum VarlinkMessageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bytes are not JSON (or exceed the JSON limits, e.g. nesting depth).
    case invalidJSON(JSONError)
    /// The JSON is valid but not an object; carries the JSON type name found.
    case notAnObject(String)
    /// A required field (`method` in a call) is absent.
    case missingField(String)
    /// A field has the wrong JSON type, e.g. `"more": "yes"`.
    case wrongFieldType(field: String, expected: String)
    /// `method` is not of the form `reverse.domain.interface.Method`.
    case invalidMethodName(String)

    public var description: String {
        switch self {
        case let .invalidJSON(error): return "message is not valid JSON: \(error)"
        case let .notAnObject(type): return "message is a JSON \(type), not an object"
        case let .missingField(field): return "message lacks the field \"\(field)\""
        case let .wrongFieldType(field, expected): return "message field \"\(field)\" is not \(expected)"
        case let .invalidMethodName(name): return "\"\(name)\" is not a fully qualified method name"
        }
    }

    /// The field a `org.varlink.service.InvalidParameter` reply names for this error, or
    /// `nil` when the message is not even a JSON object and the stream is not trusted.
    var offendingField: String? {
        switch self {
        case .invalidJSON, .notAnObject: return nil
        case let .missingField(field): return field
        case let .wrongFieldType(field, _): return field
        case .invalidMethodName: return "method"
        }
    }
}
