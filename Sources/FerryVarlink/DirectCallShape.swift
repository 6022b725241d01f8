/// Where the method name and the parameters object sit in a call message of the common shape
/// `{"method":"NAME","parameters":{...}}`: those two members, in that order, and nothing else,
/// with JSON whitespace allowed around every token, as clients write it compactly (Go's and
/// systemd's) or spaced (Python's `json.dumps`: `{"method": "NAME", "parameters": {...}}`).
///
/// Pure and bounded by its input. It checks the message's frame only: `parameters` is the
/// range from the first byte after the colon's whitespace to the last byte before the closing
/// brace's whitespace, which a direct decoder must read as exactly one object (anything else
/// there, a member after it included, makes the decoder decline and the message take the
/// ordinary decoding). A name with an escape or a control byte is not of the common shape.
struct DirectCallShape: Equatable {
    /// The method name's bytes, between its quotes.
    let name: Range<Int>
    /// The parameters object's bytes, whitespace around it excluded.
    let parameters: Range<Int>

    private static let method = Array(#""method""#.utf8)
    private static let parametersKey = Array(#""parameters""#.utf8)

    init?(_ b: UnsafeBufferPointer<UInt8>) {
        var i = 0
        func skipWhitespace() {
            while i < b.count, Self.isWhitespace(b[i]) { i += 1 }
        }
        func take(_ byte: UInt8) -> Bool {
            skipWhitespace()
            guard i < b.count, b[i] == byte else { return false }
            i += 1
            return true
        }
        func take(_ literal: [UInt8]) -> Bool {
            skipWhitespace()
            guard b.count - i >= literal.count else { return false }
            for k in 0..<literal.count where b[i + k] != literal[k] { return false }
            i += literal.count
            return true
        }
        guard take(UInt8(ascii: "{")), take(Self.method), take(UInt8(ascii: ":")), take(UInt8(ascii: "\"")) else { return nil }
        let nameStart = i
        while i < b.count, b[i] != UInt8(ascii: "\"") {
            guard b[i] >= 0x20, b[i] != UInt8(ascii: "\\") else { return nil }
            i += 1
        }
        guard i < b.count else { return nil }
        let nameEnd = i
        i += 1
        guard take(UInt8(ascii: ",")), take(Self.parametersKey), take(UInt8(ascii: ":")) else { return nil }
        skipWhitespace()
        var end = b.count
        while end > i, Self.isWhitespace(b[end - 1]) { end -= 1 }
        guard end > i, b[end - 1] == UInt8(ascii: "}") else { return nil }
        end -= 1
        while end > i, Self.isWhitespace(b[end - 1]) { end -= 1 }
        guard end > i else { return nil }
        name = nameStart..<nameEnd
        parameters = i..<end
    }

    /// JSON's whitespace: space, tab, line feed, carriage return.
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}
