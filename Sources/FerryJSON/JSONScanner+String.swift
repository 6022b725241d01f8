// String literals: UTF-8 validation, escapes and surrogate pairs.

/// Where a scanned string's text is: still in the input (no escapes), or
/// decoded into the scanner's scratch buffer.
struct JSONStringToken {
    /// Content range in the input, between the quotes.
    var start: Int
    var end: Int
    /// Whether the text had escapes (and, when decoded, now lives in `scratch`).
    var hasEscapes: Bool
    /// Whether every byte of the content is ASCII (escapes aside: false with escapes).
    var isASCII: Bool
}

extension JSONScanner {
    /// Reads the string whose opening quote is at `pos`; leaves `pos` after the
    /// closing quote. When `decode` is set, text with escapes is decoded into
    /// `scratch`; either way every rule is checked.
    mutating func scanString(decode: Bool) throws(JSONError) -> JSONStringToken {
        let start = pos + 1
        var index = start
        var isASCII = true
        // Fast path: most strings have no escapes and can be used in place. Eight bytes at a
        // time while they are all plain (printable ASCII, no quote, no backslash), then the
        // byte that is not, on its own.
        while index < end {
            if index &+ 8 <= end {
                let word = UInt64(littleEndian: UnsafeRawPointer(bytes.baseAddress! + index).loadUnaligned(as: UInt64.self))
                let special = Self.specialBytes(word)
                if special == 0 {
                    index &+= 8
                    continue
                }
                index &+= special.trailingZeroBitCount >> 3
            }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                pos = index + 1
                return JSONStringToken(start: start, end: index, hasEscapes: false, isASCII: isASCII)
            } else if byte == UInt8(ascii: "\\") {
                break
            } else if byte < 0x20 {
                throw JSONError(kind: .invalidString, offset: index, byte: byte)
            } else if byte < 0x80 {
                index += 1
            } else {
                isASCII = false
                index = try skipUTF8Sequence(at: index)
            }
        }
        guard index < end else { throw unexpectedEnd() }

        // Slow path from the first backslash: copy runs of plain text, decode escapes.
        if decode { scratch.removeAll(keepingCapacity: true) }
        var runStart = start
        while index < end {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                if decode { appendRun(runStart, index) }
                pos = index + 1
                return JSONStringToken(start: start, end: index, hasEscapes: true, isASCII: false)
            } else if byte == UInt8(ascii: "\\") {
                if decode { appendRun(runStart, index) }
                index = try scanEscape(at: index, decode: decode)
                runStart = index
            } else if byte < 0x20 {
                throw JSONError(kind: .invalidString, offset: index, byte: byte)
            } else if byte < 0x80 {
                index += 1
            } else {
                index = try skipUTF8Sequence(at: index)
            }
        }
        throw unexpectedEnd()
    }

    /// A mask whose lowest set bit lies in the first byte of `word` (read little-endian: its
    /// first byte in memory is its lowest) that a string's fast path must look at: a quote, a
    /// backslash, a control character (below 0x20) or a byte of a multi-byte sequence (0x80
    /// and up); zero when there is none. Bits above the lowest may be set for plain bytes (a
    /// borrow carries into the byte after a match), so only the lowest is to be trusted.
    @inline(__always)
    static func specialBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        // (x - 0x01…) & ~x & 0x80… flags the zero bytes of x; (x - n·0x01…) & ~x & 0x80…
        // the bytes below n (for n <= 0x80).
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let quotes = (quote &- ones) & ~quote
        let backslashes = (backslash &- ones) & ~backslash
        let controls = (word &- ones &* 0x20) & ~word
        return (quotes | backslashes | controls | word) & highs
    }

    /// The text of a token returned by `scanString(decode: true)`.
    func makeString(_ token: JSONStringToken) -> String {
        if token.hasEscapes {
            return String(decoding: scratch, as: UTF8.self)
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[token.start..<token.end]), as: UTF8.self)
    }

    private mutating func appendRun(_ from: Int, _ to: Int) {
        if from < to {
            scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[from..<to]))
        }
    }

    /// Checks the multi-byte UTF-8 sequence starting at `index` (whose first
    /// byte is >= 0x80) per RFC 3629 and returns the index after it.
    private func skipUTF8Sequence(at index: Int) throws(JSONError) -> Int {
        let lead = bytes[index]
        let length: Int
        // Tighter bounds on the second byte rule out overlong forms,
        // UTF-16 surrogates (ED A0..BF) and code points above U+10FFFF.
        var secondLow: UInt8 = 0x80
        var secondHigh: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondLow = 0xA0
        case 0xE1...0xEC, 0xEE, 0xEF: length = 3
        case 0xED: length = 3; secondHigh = 0x9F
        case 0xF0: length = 4; secondLow = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondHigh = 0x8F
        default: throw JSONError(kind: .invalidUTF8, offset: index, byte: lead)
        }
        for k in 1..<length {
            let at = index + k
            guard at < end else { throw unexpectedEnd() }
            let byte = bytes[at]
            let low = k == 1 ? secondLow : 0x80
            let high = k == 1 ? secondHigh : 0xBF
            guard byte >= low && byte <= high else {
                throw JSONError(kind: .invalidUTF8, offset: index, byte: lead)
            }
        }
        return index + length
    }

    /// Reads the escape whose backslash is at `index`; returns the index after it.
    private mutating func scanEscape(at index: Int, decode: Bool) throws(JSONError) -> Int {
        guard index + 1 < end else { throw unexpectedEnd() }
        let kind = bytes[index + 1]
        let simple: UInt8
        switch kind {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): simple = kind
        case UInt8(ascii: "b"): simple = 0x08
        case UInt8(ascii: "f"): simple = 0x0C
        case UInt8(ascii: "n"): simple = 0x0A
        case UInt8(ascii: "r"): simple = 0x0D
        case UInt8(ascii: "t"): simple = 0x09
        case UInt8(ascii: "u"):
            return try scanUnicodeEscape(at: index, decode: decode)
        default:
            throw JSONError(kind: .invalidEscape, offset: index, byte: kind)
        }
        if decode { scratch.append(simple) }
        return index + 2
    }

    /// Reads `\uXXXX` at `index`, and its `\uXXXX` low half when it is a high surrogate.
    private mutating func scanUnicodeEscape(at index: Int, decode: Bool) throws(JSONError) -> Int {
        let first = try hex4(at: index + 2, escapeOffset: index)
        var next = index + 6
        let scalar: UInt32
        switch first {
        case 0xD800...0xDBFF:
            guard next < end else { throw unexpectedEnd() }
            guard bytes[next] == UInt8(ascii: "\\") else {
                throw JSONError(kind: .invalidEscape, offset: index)
            }
            guard next + 1 < end else { throw unexpectedEnd() }
            guard bytes[next + 1] == UInt8(ascii: "u") else {
                throw JSONError(kind: .invalidEscape, offset: index)
            }
            let second = try hex4(at: next + 2, escapeOffset: next)
            guard (0xDC00...0xDFFF).contains(second) else {
                throw JSONError(kind: .invalidEscape, offset: index)
            }
            scalar = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            next += 6
        case 0xDC00...0xDFFF:
            throw JSONError(kind: .invalidEscape, offset: index)
        default:
            scalar = first
        }
        if decode { appendUTF8(scalar) }
        return next
    }

    /// Four hex digits at `index`; a bad digit is an `.invalidEscape` at `escapeOffset`.
    private func hex4(at index: Int, escapeOffset: Int) throws(JSONError) -> UInt32 {
        var value: UInt32 = 0
        for at in index..<(index + 4) {
            guard at < end else { throw unexpectedEnd() }
            let byte = bytes[at]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw JSONError(kind: .invalidEscape, offset: escapeOffset, byte: byte)
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// Appends a Unicode scalar value (never a surrogate) as UTF-8.
    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case 0..<0x80:
            scratch.append(UInt8(truncatingIfNeeded: scalar))
        case 0x80..<0x800:
            scratch.append(UInt8(truncatingIfNeeded: 0xC0 | scalar >> 6))
            scratch.append(UInt8(truncatingIfNeeded: 0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            scratch.append(UInt8(truncatingIfNeeded: 0xE0 | scalar >> 12))
            scratch.append(UInt8(truncatingIfNeeded: 0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(truncatingIfNeeded: 0x80 | scalar & 0x3F))
        default:
            scratch.append(UInt8(truncatingIfNeeded: 0xF0 | scalar >> 18))
            scratch.append(UInt8(truncatingIfNeeded: 0x80 | scalar >> 12 & 0x3F))
            scratch.append(UInt8(truncatingIfNeeded: 0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(truncatingIfNeeded: 0x80 | scalar & 0x3F))
        }
    }
}
