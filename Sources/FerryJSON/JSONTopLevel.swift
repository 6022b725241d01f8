/// The kind of a document's top-level value, as reported by `JSONParser.validate`.
public enum JSONTopLevel: Sendable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool
    /// Any number, integer or not.
    case number
    /// A string.
    case string
    /// An array.
    case array
    /// An object.
    case object
}
