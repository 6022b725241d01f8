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
    /// With `buildsValues`: whether values are wanted at this point of the document (a sink
    /// that captures a container as text turns it off inside it; the scanner then checks
    /// scalars as `validate` does, without building them).
    var building: Bool { get }
    /// A number out of a double's range where values are not built (what building would
    /// throw). A sink that validates throws it; one that captures text notes it on the capture
    /// instead, as it does a duplicate key there (`JSONCapture.isClean`).
    mutating func numberOutOfRange(_ error: JSONError) throws(JSONError)
    /// A container opens at byte `offset` (its `[` or `{`) inside `parent`.
    mutating func beginArray(at offset: Int, in parent: JSONParent)
    mutating func beginObject(at offset: Int, in parent: JSONParent)
    /// A member key of the innermost object; throws `.duplicateKey` at `offset`
    /// when the object already has it.
    mutating func key(_ key: String, offset: Int) throws(JSONError)
    /// The same for a key that is plain ASCII, without escapes, given as its bytes in the
    /// input (valid until the scan returns). The default makes the String and calls
    /// `key(_:offset:)`.
    mutating func key(ascii: UnsafeBufferPointer<UInt8>, offset: Int) throws(JSONError)
    /// A complete scalar inside `parent` (only called when `buildsValues` and `building`).
    mutating func value(_ value: JSONValue, in parent: JSONParent)
    /// Closes the innermost array, which sits inside `parent`.
    mutating func endArray(in parent: JSONParent)
    /// Closes the innermost object, which sits inside `parent`; `end` is the offset just past
    /// its `}`.
    mutating func endObject(in parent: JSONParent, end: Int)
}

extension JSONSink {
    mutating func key(ascii: UnsafeBufferPointer<UInt8>, offset: Int) throws(JSONError) {
        try key(String(decoding: ascii, as: UTF8.self), offset: offset)
    }
}
