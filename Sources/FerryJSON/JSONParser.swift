/// Strict RFC 8259 parsing and validation of untrusted bytes.
///
/// Accepts exactly one value with optional surrounding whitespace (space,
/// tab, LF, CR). Rejects comments, trailing commas, leading zeros, `+1`,
/// NaN/Infinity, ill-formed UTF-8, raw control characters in strings, lone
/// surrogate escapes, numbers that overflow `Double`, and duplicate keys.
/// Never traps on any input: size and nesting are capped by `JSONLimits`,
/// and nesting is tracked without recursion.
public enum JSONParser {
    /// Parses exactly one JSON value from `bytes`.
    /// - Throws: `JSONError` naming the first rule the input breaks and its byte offset.
    public static func parse(_ bytes: UnsafeRawBufferPointer, limits: JSONLimits = .default) throws(JSONError) -> JSONValue {
        try parseBuffer(UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count), limits: limits)
    }

    /// Parses exactly one JSON value from `bytes`.
    /// - Throws: `JSONError` naming the first rule the input breaks and its byte offset.
    public static func parse(_ bytes: [UInt8], limits: JSONLimits = .default) throws(JSONError) -> JSONValue {
        try bytes.withUnsafeBufferPointer { buffer throws(JSONError) in
            try parseBuffer(buffer, limits: limits)
        }
    }

    /// Parses exactly one JSON value from `bytes`; error offsets count from the slice's first byte.
    /// - Throws: `JSONError` naming the first rule the input breaks and its byte offset.
    public static func parse(_ bytes: ArraySlice<UInt8>, limits: JSONLimits = .default) throws(JSONError) -> JSONValue {
        try bytes.withUnsafeBufferPointer { buffer throws(JSONError) in
            try parseBuffer(buffer, limits: limits)
        }
    }

    /// Parses exactly one JSON value from the UTF-8 of `text`.
    /// - Throws: `JSONError` naming the first rule the input breaks and its UTF-8 byte offset.
    public static func parse(_ text: String, limits: JSONLimits = .default) throws(JSONError) -> JSONValue {
        guard text.utf8.count <= limits.maxBytes else { throw tooLarge(limits) }
        var text = text
        // withUTF8 is untyped `rethrows`; carry the typed error out in a Result.
        let result = text.withUTF8 { buffer in
            Result { () throws(JSONError) in try parseBuffer(buffer, limits: limits) }
        }
        return try result.get()
    }

    /// Parses exactly one JSON value from `bytes`, leaving every object found at one of `paths`
    /// (followed from the top-level value's members; at most 64 paths) as text: it stands as a
    /// placeholder (`JSONCapture`) in the value returned. A captured object's grammar, UTF-8 and
    /// depth are checked as `parse` checks them; its keys' uniqueness and its numbers' range are
    /// not, so that its reader can refuse it with an error of its own: check the text with
    /// `validate` (or `parse`) before trusting it.
    /// - Throws: `JSONError`, equal to the one `parse` would throw, except that a duplicate key
    ///   or a number out of range inside a captured object throws nothing.
    public static func parse(_ bytes: [UInt8], limits: JSONLimits = .default,
                             capturing paths: [[JSONPathComponent]]) throws(JSONError) -> (value: JSONValue, captures: [JSONCapture]) {
        try bytes.withUnsafeBufferPointer { buffer throws(JSONError) in
            try parseBuffer(buffer, limits: limits, capturing: paths)
        }
    }

    /// Checks that `bytes` hold exactly one well-formed JSON value, under the
    /// same rules and with the same errors as `parse`, without building it.
    /// Only objects allocate (one small key set per nesting level, reused).
    /// - Returns: the kind of the top-level value.
    /// - Throws: `JSONError`, equal to the one `parse` would throw.
    public static func validate(_ bytes: UnsafeRawBufferPointer, limits: JSONLimits = .default) throws(JSONError) -> JSONTopLevel {
        try validateBuffer(UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count), limits: limits)
    }

    /// Checks that `bytes` hold exactly one well-formed JSON value; see `validate(_:limits:)`.
    /// - Returns: the kind of the top-level value.
    /// - Throws: `JSONError`, equal to the one `parse` would throw.
    public static func validate(_ bytes: [UInt8], limits: JSONLimits = .default) throws(JSONError) -> JSONTopLevel {
        try bytes.withUnsafeBufferPointer { buffer throws(JSONError) in
            try validateBuffer(buffer, limits: limits)
        }
    }

    /// Checks that `bytes` hold exactly one well-formed JSON value; see `validate(_:limits:)`.
    /// Error offsets count from the slice's first byte.
    public static func validate(_ bytes: ArraySlice<UInt8>, limits: JSONLimits = .default) throws(JSONError) -> JSONTopLevel {
        try bytes.withUnsafeBufferPointer { buffer throws(JSONError) in
            try validateBuffer(buffer, limits: limits)
        }
    }

    /// Checks the one JSON value at the start of `bytes` (after any whitespace) under the same
    /// rules and with the same errors as `validate`, and stops where it ends: what follows is
    /// not read. For a reader that finds a value inside a larger text in one pass.
    /// - Returns: the kind of the value and the offset just past its last byte.
    /// - Throws: `JSONError` for the value, as `validate` would (one still open where `bytes`
    ///   end is `.unexpectedEnd`).
    public static func validatePrefix(_ bytes: UnsafeBufferPointer<UInt8>, limits: JSONLimits = .default) throws(JSONError) -> (kind: JSONTopLevel, end: Int) {
        guard bytes.count <= limits.maxBytes else { throw tooLarge(limits) }
        var scanner = JSONScanner(bytes: bytes, maxDepth: limits.maxDepth)
        var sink = JSONValidationSink()
        let kind = try scanner.run(into: &sink, stopAfterValue: true)
        return (kind, scanner.pos)
    }

    static func parseBuffer(_ buffer: UnsafeBufferPointer<UInt8>, limits: JSONLimits) throws(JSONError) -> JSONValue {
        try parseBuffer(buffer, limits: limits, capturing: []).value
    }

    static func parseBuffer(_ buffer: UnsafeBufferPointer<UInt8>, limits: JSONLimits,
                            capturing paths: [[JSONPathComponent]]) throws(JSONError) -> (value: JSONValue, captures: [JSONCapture]) {
        guard buffer.count <= limits.maxBytes else { throw tooLarge(limits) }
        var scanner = JSONScanner(bytes: buffer, maxDepth: limits.maxDepth)
        var builder = JSONValueBuilder(capturing: paths)
        _ = try scanner.run(into: &builder)
        // run only returns after the top-level value has been delivered.
        guard let root = builder.root else { throw scanner.unexpectedEnd() }
        return (root, builder.captures)
    }

    static func validateBuffer(_ buffer: UnsafeBufferPointer<UInt8>, limits: JSONLimits) throws(JSONError) -> JSONTopLevel {
        guard buffer.count <= limits.maxBytes else { throw tooLarge(limits) }
        var scanner = JSONScanner(bytes: buffer, maxDepth: limits.maxDepth)
        var sink = JSONValidationSink()
        return try scanner.run(into: &sink)
    }

    private static func tooLarge(_ limits: JSONLimits) -> JSONError {
        JSONError(kind: .tooLarge, offset: max(0, limits.maxBytes))
    }
}
