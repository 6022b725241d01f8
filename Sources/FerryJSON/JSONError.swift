/// Why an input is not one well-formed JSON value, and where.
///
/// `offset` is a byte offset into the input as given (for an `ArraySlice`,
/// relative to its first element). Two errors are equal when kind and offset
/// are; `byte` is informational, since the input and offset already fix it.
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The rule the input broke.
    public enum Kind: String, Sendable {
        /// The input is empty or only whitespace. Offset: the input's length.
        case empty
        /// The input stops inside a value. Offset: the input's length.
        case unexpectedEnd
        /// A byte that cannot appear here (a bad literal, a missing `,` `:` `]` `}`,
        /// a trailing comma, a value that cannot start with this byte). Offset: that byte.
        case unexpectedByte
        /// A number that breaks the grammar (offset: the offending byte, e.g. the
        /// second digit of `01`) or overflows `Double` (offset: the number's first byte).
        case invalidNumber
        /// An unescaped control character (< 0x20) in a string. Offset: that byte.
        case invalidString
        /// An unknown escape, a bad `\u` hex digit, or a lone surrogate.
        /// Offset: the backslash that starts the offending escape.
        case invalidEscape
        /// A string byte sequence that is not well-formed UTF-8 (including overlong
        /// forms, encoded surrogates and code points above U+10FFFF).
        /// Offset: the first byte of the sequence.
        case invalidUTF8
        /// An object member whose key equals an earlier key of the same object
        /// (compared as Swift strings, i.e. after unescaping and by canonical
        /// equivalence). Offset: the key's opening quote.
        case duplicateKey
        /// Arrays and objects nested deeper than `JSONLimits.maxDepth`.
        /// Offset: the `[` or `{` that is one level too deep.
        case tooDeep
        /// The input is longer than `JSONLimits.maxBytes`. Offset: `maxBytes`.
        case tooLarge
        /// Something other than whitespace follows the value. Offset: that byte.
        case trailingData
    }

    /// The rule the input broke.
    public var kind: Kind
    /// Byte offset into the input; see each `Kind` for which byte.
    public var offset: Int
    /// The offending byte, when there is one (used in `description`).
    public var byte: UInt8?

    /// An error of `kind` at `offset`, optionally naming the offending byte.
    public init(kind: Kind, offset: Int, byte: UInt8? = nil) {
        self.kind = kind
        self.offset = offset
        self.byte = byte
    }

    public static func == (lhs: JSONError, rhs: JSONError) -> Bool {
        lhs.kind == rhs.kind && lhs.offset == rhs.offset
    }

    /// A one-line message, e.g. "invalid JSON at byte 17: unexpected byte 0x7D".
    public var description: String {
        var text = "invalid JSON at byte \(offset): "
        switch kind {
        case .empty: text += "empty input"
        case .unexpectedEnd: text += "unexpected end of input"
        case .unexpectedByte: text += "unexpected byte"
        case .invalidNumber: text += "invalid number"
        case .invalidString: text += "unescaped control character in string"
        case .invalidEscape: text += "invalid escape sequence"
        case .invalidUTF8: text += "invalid UTF-8"
        case .duplicateKey: text += "duplicate object key"
        case .tooDeep: text += "nesting deeper than the limit"
        case .tooLarge: text += "input larger than the limit"
        case .trailingData: text += "unexpected data after the value"
        }
        if let byte {
            text += kind == .unexpectedByte ? " \(Self.hex(byte))" : " (byte \(Self.hex(byte)))"
        }
        return text
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return byte < 0x10 ? "0x0" + digits : "0x" + digits
    }
}
