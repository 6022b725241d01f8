/// What the scanner reports as it walks a document, so one grammar serves
/// both `parse` (which builds values) and `validate` (which does not).
///
/// The scanner calls these in document order and only in valid sequences:
/// `key` only inside an object, `endArray`/`endObject` only after the
/// matching `begin`.
protocol JSONSink {
    /// Whether the scanner should decode strings and convert numbers into
    /// `JSONValue`s and pass them to `value(_:in:)`.
    static var buildsValues: Bool { get }
    mutating func beginArray()
    mutating func beginObject()
    /// A member key of the innermost object; throws `.duplicateKey` at `offset`
    /// when the object already has it.
    mutating func key(_ key: String, offset: Int) throws(JSONError)
    /// A complete scalar inside `parent` (only called when `buildsValues`).
    mutating func value(_ value: JSONValue, in parent: JSONParent)
    /// Closes the innermost array, which sits inside `parent`.
    mutating func endArray(in parent: JSONParent)
    /// Closes the innermost object, which sits inside `parent`.
    mutating func endObject(in parent: JSONParent)
}
