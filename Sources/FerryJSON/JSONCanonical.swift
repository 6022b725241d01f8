/// Whether JSON text is already in `JSONWriter`'s canonical form, so that it can be stored as
/// it is instead of being parsed and written again.
public enum JSONCanonical {
    /// Checks `bytes`, which must hold one well-formed JSON value (one `JSONParser` accepted):
    /// `canonical` is true exactly when `JSONWriter.serialize` of the parsed value gives back
    /// these bytes; then `depth` counts the deepest nesting of objects and arrays (a scalar is 0,
    /// `{}` is 1, `{"a":[]}` is 2; when not canonical it is only how deep the check got).
    /// Conservative where it is cheap to be: a key with an escape,
    /// a number with a fraction or exponent and an integer of 19 or more digits count as not
    /// canonical (the caller then writes the parsed value, which is always right).
    public static func check(_ bytes: ArraySlice<UInt8>) -> (canonical: Bool, depth: Int) {
        bytes.withUnsafeBufferPointer { check($0) }
    }

    static func check(_ b: UnsafeBufferPointer<UInt8>) -> (canonical: Bool, depth: Int) {
        // Per open container: whether it is an object, and its last key's range (objects).
        var objects: [Bool] = []
        var lastKeys: [Range<Int>?] = []
        var depth = 0
        var expectKey = false
        var i = 0
        let n = b.count
        while i < n {
            let c = b[i]
            switch c {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let isObject = c == UInt8(ascii: "{")
                objects.append(isObject)
                lastKeys.append(nil)
                depth = max(depth, objects.count)
                expectKey = isObject
                i += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                objects.removeLast()
                lastKeys.removeLast()
                expectKey = false
                i += 1
            case UInt8(ascii: ","):
                expectKey = objects.last ?? false
                i += 1
            case UInt8(ascii: ":"):
                i += 1
            case UInt8(ascii: "\""):
                let start = i + 1
                var j = start
                var escaped = false
                while b[j] != UInt8(ascii: "\"") {
                    if b[j] == UInt8(ascii: "\\") {
                        escaped = true
                        guard canonicalEscape(b, at: j) else { return (false, depth) }
                        j += b[j + 1] == UInt8(ascii: "u") ? 6 : 2
                    } else {
                        j += 1
                    }
                }
                if expectKey {
                    // Keys strictly ascending bytewise, as the writer sorts them.
                    if escaped { return (false, depth) }
                    if let previous = lastKeys[lastKeys.count - 1], !precedes(b, previous, start..<j) { return (false, depth) }
                    lastKeys[lastKeys.count - 1] = start..<j
                    expectKey = false
                }
                i = j + 1
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                var j = i
                if b[j] == UInt8(ascii: "-") { j += 1 }
                let digits = j
                while j < n, b[j] >= UInt8(ascii: "0"), b[j] <= UInt8(ascii: "9") { j += 1 }
                if j < n, b[j] == UInt8(ascii: ".") || b[j] == UInt8(ascii: "e") || b[j] == UInt8(ascii: "E") { return (false, depth) }
                // -0 is written 0; 19 digits may not fit Int64 (then it is a double).
                if j - digits >= 19 || (b[i] == UInt8(ascii: "-") && j - digits == 1 && b[digits] == UInt8(ascii: "0")) { return (false, depth) }
                i = j
            case UInt8(ascii: "t"), UInt8(ascii: "n"):
                i += 4
            case UInt8(ascii: "f"):
                i += 5
            default:
                // Whitespace (the only other bytes valid JSON has between tokens).
                return (false, depth)
            }
        }
        return (true, depth)
    }

    /// The writer escapes `"`, `\` and control characters only: `\b \f \n \r \t`, others as
    /// `\u00xx` in lowercase.
    private static func canonicalEscape(_ b: UnsafeBufferPointer<UInt8>, at j: Int) -> Bool {
        switch b[j + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
             UInt8(ascii: "r"), UInt8(ascii: "t"):
            return true
        case UInt8(ascii: "u"):
            guard b[j + 2] == UInt8(ascii: "0"), b[j + 3] == UInt8(ascii: "0") else { return false }
            let hi = b[j + 4], lo = b[j + 5]
            guard hi == UInt8(ascii: "0") || hi == UInt8(ascii: "1") else { return false }
            guard let low = lowercaseHex(lo) else { return false }
            let value = (hi - UInt8(ascii: "0")) << 4 | low
            return ![0x08, 0x0C, 0x0A, 0x0D, 0x09].contains(value)
        default:
            return false
        }
    }

    private static func lowercaseHex(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        default: return nil
        }
    }

    private static func precedes(_ b: UnsafeBufferPointer<UInt8>, _ x: Range<Int>, _ y: Range<Int>) -> Bool {
        let shared = min(x.count, y.count)
        for k in 0..<shared where b[x.lowerBound + k] != b[y.lowerBound + k] {
            return b[x.lowerBound + k] < b[y.lowerBound + k]
        }
        return x.count < y.count
    }
}
