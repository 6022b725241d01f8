/// One step of a capture path: a member of an object, or any element of an array.
public enum JSONPathComponent: Sendable, Hashable {
    case key(String)
    case anyElement
}

/// An object `JSONParser.parse(_:limits:capturing:)` left as text: which path it was found at,
/// and its bytes' range in the parsed buffer. In the parsed value it stands as a placeholder
/// object, `{"\u{0}capture": index}`, where `index` counts captures in document order.
///
/// A placeholder cannot be forged: every object at a capture path is captured, so an object
/// with that key the input holds at such a path is captured too, and elsewhere it is not
/// taken for one by a caller that only looks at its capture paths.
public struct JSONCapture: Sendable, Hashable {
    /// The index of the capture path it was found at.
    public var path: Int
    /// Its bytes, from `{` to `}`, in the parsed buffer.
    public var range: Range<Int>
    /// Its nesting depth: 1 for an object of scalars, 2 with an object or array inside, ...
    public var depth: Int
    /// It passed every check `JSONParser.validate` makes (grammar, UTF-8, no duplicate keys, no
    /// number out of a double's range), so its text needs no second reading. A capture that
    /// is not clean is still well-formed grammar; reading it again says what is wrong.
    public var isClean: Bool

    public init(path: Int, range: Range<Int>, depth: Int = 1, isClean: Bool = false) {
        self.path = path
        self.range = range
        self.depth = depth
        self.isClean = isClean
    }

    static let placeholderKey = "\u{0}capture"

    static func placeholder(_ index: Int) -> JSONValue {
        .object([placeholderKey: .int(Int64(index))])
    }

    /// The capture index a placeholder stands for; nil for any other value.
    public static func index(of value: JSONValue) -> Int? {
        guard case .object(let o) = value, o.count == 1, case .int(let i)? = o[placeholderKey], i >= 0, i <= Int.max else { return nil }
        return Int(i)
    }

    /// `value` with every placeholder replaced by the object it stands for, parsed from
    /// `bytes` (the buffer the captures were made from).
    /// - Throws: what parsing a captured object throws (a duplicate key, a number out of range:
    ///   the checks a capture leaves to its reader), with offsets into `bytes`.
    public static func materialize(_ value: JSONValue, captures: [JSONCapture], bytes: [UInt8],
                                   limits: JSONLimits = .default) throws(JSONError) -> JSONValue {
        if let i = index(of: value), i < captures.count {
            let range = captures[i].range
            do {
                return try JSONParser.parse(bytes[range], limits: limits)
            } catch {
                throw JSONError(kind: error.kind, offset: error.offset + range.lowerBound, byte: error.byte)
            }
        }
        switch value {
        case .array(let items):
            var out: [JSONValue] = []
            out.reserveCapacity(items.count)
            for item in items { out.append(try materialize(item, captures: captures, bytes: bytes, limits: limits)) }
            return .array(out)
        case .object(let members):
            var out = [String: JSONValue](minimumCapacity: members.count)
            for (key, member) in members { out[key] = try materialize(member, captures: captures, bytes: bytes, limits: limits) }
            return .object(out)
        default:
            return value
        }
    }
}
