/// A payload's JSON text shown without changing a token of it: the numbers, strings and key
/// order exactly as stored, only the whitespace between tokens redone. The input is JSON the
/// daemon accepted (one valid object); anything else is returned with its whitespace dropped
/// or indented as well as the structure allows, never altered inside strings.
enum PayloadText {
    /// On one line, with no whitespace between tokens.
    static func compact(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        var inString = false, escaped = false
        for byte in text.utf8 {
            if inString {
                out.append(byte)
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): continue
            case UInt8(ascii: "\""): inString = true; out.append(byte)
            default: out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Indented by two spaces a level, `": "` after keys; continuation lines start with
    /// `indent`. Empty objects and arrays stay `{}` and `[]`.
    static func pretty(_ text: String, indent: String = "") -> String {
        let bytes = Array(compact(text).utf8)
        var out = ""
        var level = 0
        var i = 0
        func newline() { out += "\n" + indent + String(repeating: "  ", count: level) }
        while i < bytes.count {
            let byte = bytes[i]
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let close = byte == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                if i + 1 < bytes.count && bytes[i + 1] == close {
                    out += byte == UInt8(ascii: "{") ? "{}" : "[]"
                    i += 2
                    continue
                }
                out.unicodeScalars.append(Unicode.Scalar(byte))
                level += 1
                newline()
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                level = max(0, level - 1)
                newline()
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: ","):
                out += ","
                newline()
            case UInt8(ascii: ":"):
                out += ": "
            case UInt8(ascii: "\""):
                // The whole string, escapes and all.
                var j = i + 1
                var esc = false
                while j < bytes.count {
                    if esc { esc = false } else if bytes[j] == UInt8(ascii: "\\") { esc = true } else if bytes[j] == UInt8(ascii: "\"") { break }
                    j += 1
                }
                let end = min(j + 1, bytes.count)
                out += String(decoding: bytes[i..<end], as: UTF8.self)
                i = end
                continue
            default:
                var j = i
                while j < bytes.count, !"{}[],:\"".utf8.contains(bytes[j]) { j += 1 }
                out += String(decoding: bytes[i..<j], as: UTF8.self)
                i = j
                continue
            }
            i += 1
        }
        return out
    }
}
