import FerryJSON

/// Field-level decoding shared by calls and replies.
enum VarlinkWire {
    static func decodeObject(
        _ bytes: [UInt8], limits: JSONLimits
    ) throws(VarlinkMessageError) -> [String: JSONValue] {
        try decodeObject(bytes, limits: limits, capturing: []).object
    }

    /// Decodes a message, leaving the objects at `paths` as text (see `JSONParser.parse(_:limits:capturing:)`).
    static func decodeObject(
        _ bytes: [UInt8], limits: JSONLimits, capturing paths: [[JSONPathComponent]]
    ) throws(VarlinkMessageError) -> (object: [String: JSONValue], captures: [JSONCapture]) {
        let value: JSONValue
        let captures: [JSONCapture]
        do {
            (value, captures) = try JSONParser.parse(bytes, limits: limits, capturing: paths)
        } catch {
            throw .invalidJSON(error)
        }
        guard case let .object(object) = value else { throw .notAnObject(value.typeName) }
        return (object, captures)
    }

    static func parameters(in object: [String: JSONValue]) throws(VarlinkMessageError) -> [String: JSONValue] {
        switch object["parameters"] {
        case nil, .null?: return [:]
        case let .object(parameters)?: return parameters
        default: throw .wrongFieldType(field: "parameters", expected: "an object")
        }
    }

    static func flag(_ name: String, in object: [String: JSONValue]) throws(VarlinkMessageError) -> Bool {
        switch object[name] {
        case nil, .null?: return false
        case let .bool(value)?: return value
        default: throw .wrongFieldType(field: name, expected: "a boolean")
        }
    }
}
