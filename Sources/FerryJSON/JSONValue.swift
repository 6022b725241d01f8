/// A JSON value.
///
/// Objects are dictionaries: the parser rejects duplicate keys rather than
/// picking one, so a parsed object holds every member of its source text.
/// Numbers keep the distinction the wire makes: a literal without fraction or
/// exponent that fits `Int64` is `.int`, every other number is `.double`.
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number literal without fraction or exponent that fits `Int64`.
    case int(Int64)
    /// Any other number. The parser only produces finite values.
    case double(Double)
    /// A string (any Unicode text, including U+0000).
    case string(String)
    /// An ordered list of values.
    case array([JSONValue])
    /// A set of uniquely named members. Key order is not kept; the writer
    /// sorts keys bytewise by default.
    case object([String: JSONValue])
}
