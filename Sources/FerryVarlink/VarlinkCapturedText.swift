import FerryJSON

/// The objects a call holds at its method's capture paths, as the client sent them: in the
/// call's parameters each stands as a placeholder (see `JSONCapture`), and `text(of:)` gives
/// its bytes, which `JSONParser` accepted (duplicate keys included) but did not build.
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

    /// `text` (from `text(of:)`) parsed; it parses, because it was checked within the
    /// message's limits, which apply again.
    public func value(of text: ArraySlice<UInt8>) throws(JSONError) -> JSONValue {
        try JSONParser.parse(text, limits: limits)
    }
}
