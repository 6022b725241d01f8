/// Compact JSON serialization.
///
/// Output has no whitespace. With `sortedKeys` (the default) object keys are
/// sorted bytewise by UTF-8, so equal values always serialize to equal bytes
/// (canonical form, fit for hashing and signing). Strings escape only `"`,
/// `\` and control characters below 0x20 (`\b \f \n \r \t`, else `\u00xx`);
/// everything else is written as raw UTF-8. Doubles use the shortest text that
/// parses back to the same value (`1.5`, `1e+300`, `2.0`); non-finite doubles
/// become `null`. Output always parses back with `JSONParser`.
///
/// Nesting is followed by recursion: values from `JSONParser` are at most
/// `JSONLimits.maxDepth` deep.
public enum JSONWriter {
    /// The compact serialization of `value`.
    public static func serialize(_ value: JSONValue, sortedKeys: Bool = true) -> [UInt8] {
        var out: [UInt8] = []
        append(value, to: &out, sortedKeys: sortedKeys)
        return out
    }

    /// The compact serialization of `value`, as a `String`.
    public static func string(_ value: JSONValue, sortedKeys: Bool = true) -> String {
        String(decoding: serialize(value, sortedKeys: sortedKeys), as: UTF8.self)
    }

    /// Appends the compact serialization of `value` to `out`.
    public static func append(_ value: JSONValue, to out: inout [UInt8], sortedKeys: Bool = true) {
        switch value {
        case .null:
            out.append(contentsOf: "null".utf8)
        case .bool(let b):
            out.append(contentsOf: b ? "true".utf8 : "false".utf8)
        case .int(let i):
            appendInteger(i, to: &out)
        case .double(let d):
            if d.isFinite {
                // Swift's description is the shortest round-trip form and always
                // has a `.` or an exponent, so it parses back as a double.
                out.append(contentsOf: d.description.utf8)
            } else {
                out.append(contentsOf: "null".utf8)
            }
        case .string(let s):
            appendString(s, to: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            var first = true
            for element in elements {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                append(element, to: &out, sortedKeys: sortedKeys)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            var first = true
            if sortedKeys {
                for (key, member) in members.sorted(by: { utf8Precedes($0.key, $1.key) }) {
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    appendString(key, to: &out)
                    out.append(UInt8(ascii: ":"))
                    append(member, to: &out, sortedKeys: sortedKeys)
                }
            } else {
                for (key, member) in members {
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    appendString(key, to: &out)
                    out.append(UInt8(ascii: ":"))
                    append(member, to: &out, sortedKeys: sortedKeys)
                }
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `s` as a quoted, escaped JSON string.
    public static func appendString(_ s: String, to out: inout [UInt8]) {
        var s = s
        s.withUTF8 { text in
            out.reserveCapacity(out.count + text.count + 2)
            out.append(UInt8(ascii: "\""))
            var runStart = 0
            for index in 0..<text.count {
                let byte = text[index]
                if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") { continue }
                if runStart < index {
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: text[runStart..<index]))
                }
                runStart = index + 1
                out.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(byte)
                case 0x08: out.append(UInt8(ascii: "b"))
                case 0x0C: out.append(UInt8(ascii: "f"))
                case 0x0A: out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(UInt8(ascii: "r"))
                case 0x09: out.append(UInt8(ascii: "t"))
                default:
                    out.append(contentsOf: "u00".utf8)
                    out.append(hexDigit(byte >> 4))
                    out.append(hexDigit(byte & 0x0F))
                }
            }
            if runStart < text.count {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: text[runStart..<text.count]))
            }
            out.append(UInt8(ascii: "\""))
        }
    }

    /// Appends `value` as a JSON number.
    public static func appendInteger(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        // 20 digits hold UInt64.max; digits are produced last-first.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = 20
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start..<20]))
        }
    }

    /// Appends text known at compile time (JSON punctuation and keys) as it is.
    @inlinable
    public static func appendRaw(_ text: StaticString, to out: inout [UInt8]) {
        text.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    /// Bytewise UTF-8 order, which is also Unicode code point order.
    static func utf8Precedes(_ a: String, _ b: String) -> Bool {
        let fast = a.utf8.withContiguousStorageIfAvailable { left in
            b.utf8.withContiguousStorageIfAvailable { right -> Bool in
                let shared = min(left.count, right.count)
                for index in 0..<shared where left[index] != right[index] {
                    return left[index] < right[index]
                }
                return left.count < right.count
            }
        }
        if let fast, let result = fast { return result }
        return a.utf8.lexicographicallyPrecedes(b.utf8)
    }
}
