import FerryJSON

/// The `where` of `list`, built from `field=value` terms as a user types them.
///
/// The value is read as JSON when it is a JSON scalar (`true`, `3`, `2.5`, `"x"`, `null`)
/// and as a plain string otherwise, so `done=false` matches the boolean and `title=milk`
/// the string; `n="3"` matches the string `"3"` where `n=3` matches the number.
public enum PayloadFilter {
    /// One `field=value` term. The field is everything before the first `=`.
    /// - Throws: `PayloadFilterError` when there is no `=` or the field is empty.
    public static func parse(_ term: String) throws(PayloadFilterError) -> (field: String, value: JSONValue) {
        guard let equals = term.firstIndex(of: "=") else {
            throw PayloadFilterError(term: term, reason: "expected field=value")
        }
        let field = String(term[..<equals])
        guard !field.isEmpty else { throw PayloadFilterError(term: term, reason: "the field name is empty") }
        return (field, value(String(term[term.index(after: equals)...])))
    }

    /// Many terms, as the `where` object of `list`.
    /// - Throws: `PayloadFilterError` for a malformed term or a field given twice.
    public static func parse(_ terms: [String]) throws(PayloadFilterError) -> [String: JSONValue] {
        var filter: [String: JSONValue] = [:]
        for term in terms {
            let (field, value) = try parse(term)
            guard filter[field] == nil else {
                throw PayloadFilterError(term: term, reason: "the field \(field) is given twice")
            }
            filter[field] = value
        }
        return filter
    }

    /// `text` as a JSON scalar when it is one, else as a string.
    public static func value(_ text: String) -> JSONValue {
        let limits = JSONLimits(maxBytes: 1 << 20, maxDepth: 0)
        if let parsed = try? JSONParser.parse(text, limits: limits) {
            switch parsed {
            case .array, .object: break
            default: return parsed
            }
        }
        return .string(text)
    }
}

/// A `where` term `PayloadFilter` cannot read.
public struct PayloadFilterError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The term as given.
    public var term: String
    public var reason: String

    public init(term: String, reason: String) {
        self.term = term
        self.reason = reason
    }

    public var description: String { "invalid filter \"\(term)\": \(reason) (for example done=false or title=milk)" }
}
