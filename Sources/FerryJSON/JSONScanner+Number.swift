// Number literals: grammar, int/double classification, and conversion.

/// A number literal that passed the grammar, with what conversion needs.
struct JSONNumberToken {
    /// The literal's range in the input, sign included.
    var start: Int
    var end: Int
    var negative: Bool
    /// No fraction and no exponent.
    var isInteger: Bool
    /// Digits of integer part and fraction, leading zeros skipped, while
    /// `significantDigits <= 19` (so it never overflows).
    var mantissa: UInt64
    /// Digits after the leading zeros; above 19, `mantissa` is incomplete.
    var significantDigits: Int
    /// Digits before the point (at least 1).
    var integerDigits: Int
    /// Digits after the point.
    var fractionDigits: Int
    /// The explicit exponent, saturated at about ±1e10 (enough to decide overflow).
    var exponent: Int
}

extension JSONScanner {
    /// Reads the number at `pos` (a `-` or digit) and leaves `pos` after it.
    /// The literal stops at the first byte the grammar cannot continue with;
    /// the caller judges that byte.
    mutating func scanNumber() throws(JSONError) -> JSONNumberToken {
        var token = JSONNumberToken(
            start: pos, end: pos, negative: false, isInteger: true, mantissa: 0,
            significantDigits: 0, integerDigits: 0, fractionDigits: 0, exponent: 0)
        var index = pos
        if bytes[index] == UInt8(ascii: "-") {
            token.negative = true
            index += 1
            guard index < end else { throw unexpectedEnd() }
        }

        let first = bytes[index]
        if first == UInt8(ascii: "0") {
            token.integerDigits = 1
            index += 1
            if index < end, let _ = Self.digit(bytes[index]) {
                throw JSONError(kind: .invalidNumber, offset: index, byte: bytes[index])
            }
        } else if Self.digit(first) != nil {
            while index < end, let d = Self.digit(bytes[index]) {
                Self.accumulate(d, into: &token)
                token.integerDigits += 1
                index += 1
            }
        } else {
            throw JSONError(kind: .invalidNumber, offset: index, byte: first)
        }

        if index < end && bytes[index] == UInt8(ascii: ".") {
            token.isInteger = false
            index += 1
            guard index < end else { throw unexpectedEnd() }
            guard Self.digit(bytes[index]) != nil else {
                throw JSONError(kind: .invalidNumber, offset: index, byte: bytes[index])
            }
            while index < end, let d = Self.digit(bytes[index]) {
                Self.accumulate(d, into: &token)
                token.fractionDigits += 1
                index += 1
            }
        }

        if index < end && bytes[index] | 0x20 == UInt8(ascii: "e") {
            token.isInteger = false
            index += 1
            guard index < end else { throw unexpectedEnd() }
            var exponentNegative = false
            if bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                exponentNegative = bytes[index] == UInt8(ascii: "-")
                index += 1
                guard index < end else { throw unexpectedEnd() }
            }
            guard Self.digit(bytes[index]) != nil else {
                throw JSONError(kind: .invalidNumber, offset: index, byte: bytes[index])
            }
            var exponent = 0
            while index < end, let d = Self.digit(bytes[index]) {
                if exponent < 1_000_000_000 { exponent = exponent * 10 + Int(d) }
                index += 1
            }
            token.exponent = exponentNegative ? -exponent : exponent
        }

        token.end = index
        pos = index
        return token
    }

    /// The value of a scanned number: `.int` when it is an integer literal
    /// that fits `Int64`, else `.double`. Throws `.invalidNumber` (at the
    /// number's first byte) when it overflows `Double`.
    func numberValue(_ token: JSONNumberToken) throws(JSONError) -> JSONValue {
        if token.isInteger && token.significantDigits <= 19 {
            let magnitude = token.mantissa
            if token.negative {
                if magnitude == UInt64(1) << 63 { return .int(.min) }
                if magnitude < UInt64(1) << 63 { return .int(-Int64(magnitude)) }
            } else if magnitude <= UInt64(Int64.max) {
                return .int(Int64(magnitude))
            }
        }
        return .double(try doubleValue(token))
    }

    /// What `numberValue` checks, without converting numbers that cannot
    /// overflow (which is nearly all of them).
    func checkNumber(_ token: JSONNumberToken) throws(JSONError) {
        // The value is below 10^(integerDigits + exponent); at most 10^308 is finite.
        if token.integerDigits + token.exponent > 308 {
            _ = try doubleValue(token)
        }
    }

    private func doubleValue(_ token: JSONNumberToken) throws(JSONError) -> Double {
        let power = token.exponent - token.fractionDigits
        // Clinger's fast path: an exact mantissa and an exact power of ten give
        // a correctly rounded result in one operation.
        if token.significantDigits <= 19 && token.mantissa <= UInt64(1) << 53
            && power >= -22 && power <= 22
        {
            var value = Double(token.mantissa)
            if power < 0 {
                value /= Self.powersOfTen[-power]
            } else {
                value *= Self.powersOfTen[power]
            }
            return token.negative ? -value : value
        }
        // The standard library's correctly rounded conversion; the text passed
        // the JSON grammar, which is a subset of what it accepts.
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[token.start..<token.end]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw JSONError(kind: .invalidNumber, offset: token.start)
        }
        return value
    }

    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    @inline(__always)
    private static func digit(_ byte: UInt8) -> UInt8? {
        let d = byte &- UInt8(ascii: "0")
        return d < 10 ? d : nil
    }

    @inline(__always)
    private static func accumulate(_ digit: UInt8, into token: inout JSONNumberToken) {
        if token.significantDigits == 0 && digit == 0 { return }
        token.significantDigits += 1
        if token.significantDigits <= 19 {
            token.mantissa = token.mantissa * 10 + UInt64(digit)
        }
    }
}
