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

    public init(path: Int, range: Range<Int>) {
        self.path = path
        self.range = range
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

    /// The nesting depth of JSON text a parser accepted, such as a capture's: the deepest
    /// nesting of objects and arrays (a scalar is 0, `{}` is 1, `{"a":[]}` is 2). One pass over
    /// the bytes, brackets inside strings skipped.
    public static func depth(of text: ArraySlice<UInt8>) -> Int {
        var depth = 0, deepest = 0
        var inString = false, escaped = false
        for byte in text {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                deepest = max(deepest, depth)
            case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
            default: break
            }
        }
        return deepest
    }

    /// `value` with every placeholder replaced by the object it stands for, parsed from
    /// `bytes` (the buffer the captures were made from).
    public static func materialize(_ value: JSONValue, captures: [JSONCapture], bytes: [UInt8],
                                   limits: JSONLimits = .default) -> JSONValue {
        if let i = index(of: value), i < captures.count,
           let parsed = try? JSONParser.parse(bytes[captures[i].range], limits: limits) {
            return parsed
        }
        switch value {
        case .array(let items):
            return .array(items.map { materialize($0, captures: captures, bytes: bytes, limits: limits) })
        case .object(let members):
            return .object(members.mapValues { materialize($0, captures: captures, bytes: bytes, limits: limits) })
        default:
            return value
        }
    }
}
