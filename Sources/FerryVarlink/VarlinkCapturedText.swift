import FerryJSON

/// The objects a call holds at its method's capture paths, as the client sent them: in the
/// call's parameters each stands as a placeholder (see `JSONCapture`), and `text(of:)` gives
/// its bytes. Their grammar, UTF-8 and depth were checked. A duplicate key or a number out of
/// range inside one does not fail the message: the handler checks such a capture again
/// (`value(of:)` does) and answers with its own error; `isWellFormed` tells which need it.
public struct VarlinkCapturedText: Sendable {
    /// The message the captures were made from (without its NUL).
    let frame: [UInt8]
    let captures: [JSONCapture]
    /// The limits the message was parsed with.
    let limits: JSONLimits

    /// The text of the object `value` stands for; nil when `value` is not a placeholder of
    /// this call (then it is an ordinary value).
    public func text(of value: JSONValue?) -> ArraySlice<UInt8>? {
        guard let value, let i = JSONCapture.index(of: value), i < captures.count else { return nil }
        return frame[captures[i].range]
    }

    /// Whether the object `value` stands for passed every check `JSONParser.validate` makes
    /// when the message was parsed and is at most `maxDepth` deep, so that its text needs no
    /// second reading. False for a value that is not a placeholder of this call.
    public func isWellFormed(_ value: JSONValue?, maxDepth: Int) -> Bool {
        guard let value, let i = JSONCapture.index(of: value), i < captures.count else { return false }
        return captures[i].isClean && captures[i].depth <= maxDepth
    }

    /// `text` (from `text(of:)`) parsed within the message's limits.
    /// - Throws: a duplicate key or a number out of range, the checks a capture leaves.
    public func value(of text: ArraySlice<UInt8>) throws(JSONError) -> JSONValue {
        try JSONParser.parse(text, limits: limits)
    }
}
