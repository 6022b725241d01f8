import FerryAPI
import FerryJSON

// Typed reads of reply fields beyond the ones FerryAPI provides. Each throws a `WireError`
// naming the field, so a malformed reply says exactly what was wrong.
extension Dictionary where Key == String, Value == JSONValue {
    /// A required integer field.
    func int64(_ key: String) throws(WireError) -> Int64 {
        guard let value = self[key]?.intValue else { throw WireError(field: key, expected: "int") }
        return value
    }

    /// A required integer field that fits `Int`.
    func int(_ key: String) throws(WireError) -> Int {
        guard let value = self[key]?.intValue, let int = Int(exactly: value) else {
            throw WireError(field: key, expected: "int")
        }
        return int
    }

    /// An optional integer field (absent or null is nil).
    func optionalInt64(_ key: String) throws(WireError) -> Int64? {
        switch self[key] {
        case nil, .null?: return nil
        case let value?:
            guard let int = value.intValue else { throw WireError(field: key, expected: "int") }
            return int
        }
    }

    /// A required object field.
    func object(_ key: String) throws(WireError) -> [String: JSONValue] {
        guard let value = self[key]?.objectValue else { throw WireError(field: key, expected: "object") }
        return value
    }

    /// An array field of objects; absent is empty.
    func objects(_ key: String) throws(WireError) -> [[String: JSONValue]] {
        switch self[key] {
        case nil, .null?: return []
        case .array(let items)?:
            var out: [[String: JSONValue]] = []
            out.reserveCapacity(items.count)
            for item in items {
                guard let object = item.objectValue else { throw WireError(field: key, expected: "array of objects") }
                out.append(object)
            }
            return out
        default: throw WireError(field: key, expected: "array of objects")
        }
    }

    /// A required record field.
    func record(_ key: String) throws(WireError) -> WireRecord {
        guard let value = self[key] else { throw WireError(field: key, expected: "record") }
        return try WireRecord(json: value)
    }

    /// An optional record field (absent or null is nil).
    func optionalRecord(_ key: String) throws(WireError) -> WireRecord? {
        switch self[key] {
        case nil, .null?: return nil
        case let value?: return try WireRecord(json: value)
        }
    }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// Sets `key` to `value` when it is not nil (Varlink optional fields are left out, not null).
    mutating func setIfPresent(_ key: String, _ value: JSONValue?) {
        if let value { self[key] = value }
    }
}

extension Optional where Wrapped == String {
    /// `.string` of the value, or nil.
    var json: JSONValue? { map(JSONValue.string) }
}

extension Optional where Wrapped == Int64 {
    /// `.int` of the value, or nil.
    var json: JSONValue? { map(JSONValue.int) }
}
