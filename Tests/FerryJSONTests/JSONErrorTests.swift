import FerryJSON
import Testing

/// Every error kind, with the offset each promises; parse and validate must throw the same.
@Suite struct JSONErrorTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var input: [UInt8]
        var kind: JSONError.Kind
        var offset: Int
        var limits = JSONLimits.default
        var testDescription: String { "\(String(decoding: input.prefix(40), as: UTF8.self)) -> \(kind)@\(offset)" }

        init(_ text: String, _ kind: JSONError.Kind, _ offset: Int, limits: JSONLimits = .default) {
            self.init(Array(text.utf8), kind, offset, limits: limits)
        }

        init(_ bytes: [UInt8], _ kind: JSONError.Kind, _ offset: Int, limits: JSONLimits = .default) {
            input = bytes
            self.kind = kind
            self.offset = offset
            self.limits = limits
        }
    }

    static let cases: [Case] = [
        // empty
        Case("", .empty, 0),
        Case(" \n\t\r", .empty, 4),
        // unexpectedEnd: offset is always the input length
        Case("[1,", .unexpectedEnd, 3),
        Case("[1", .unexpectedEnd, 2),
        Case("{\"a\"", .unexpectedEnd, 4),
        Case("{\"a\":", .unexpectedEnd, 5),
        Case("{", .unexpectedEnd, 1),
        Case("\"abc", .unexpectedEnd, 4),
        Case("\"ab\\", .unexpectedEnd, 4),
        Case("\"\\u12", .unexpectedEnd, 5),
        Case("\"\\uD83D", .unexpectedEnd, 7),
        Case("\"\\uD83D\\u", .unexpectedEnd, 9),
        Case([0x22, 0xE2, 0x82], .unexpectedEnd, 3),
        Case("tru", .unexpectedEnd, 3),
        Case("-", .unexpectedEnd, 1),
        Case("1.", .unexpectedEnd, 2),
        Case("1e", .unexpectedEnd, 2),
        Case("1e-", .unexpectedEnd, 3),
        // unexpectedByte
        Case("[1,]", .unexpectedByte, 3),
        Case("{\"a\":1,}", .unexpectedByte, 7),
        Case("{\"a\" 1}", .unexpectedByte, 5),
        Case("{1:2}", .unexpectedByte, 1),
        Case("[1 2]", .unexpectedByte, 3),
        Case("[1}", .unexpectedByte, 2),
        Case("{\"a\":1]", .unexpectedByte, 6),
        Case("+1", .unexpectedByte, 0),
        Case(".5", .unexpectedByte, 0),
        Case("NaN", .unexpectedByte, 0),
        Case("Infinity", .unexpectedByte, 0),
        Case("trux", .unexpectedByte, 3),
        Case("nul", .unexpectedEnd, 3),
        Case("True", .unexpectedByte, 0),
        Case("'a'", .unexpectedByte, 0),
        Case("// comment\n1", .unexpectedByte, 0),
        Case("[1,/*c*/2]", .unexpectedByte, 3),
        Case("\u{FEFF}1", .unexpectedByte, 0),
        Case("[\u{0B}1]", .unexpectedByte, 1),
        // invalidNumber
        Case("01", .invalidNumber, 1),
        Case("-01", .invalidNumber, 2),
        Case("[00]", .invalidNumber, 2),
        Case("-a", .invalidNumber, 1),
        Case("-Infinity", .invalidNumber, 1),
        Case("1.e5", .invalidNumber, 2),
        Case("1.]", .invalidNumber, 2),
        Case("1ex", .invalidNumber, 2),
        Case("1e+-1", .invalidNumber, 3),
        Case("1e309", .invalidNumber, 0),
        Case("[0,-1e400]", .invalidNumber, 3),
        Case("179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792", .invalidNumber, 0),
        // invalidString
        Case("\"a\nb\"", .invalidString, 2),
        Case("\"\u{0}\"", .invalidString, 1),
        Case("[\"\t\"]", .invalidString, 2),
        Case("{\"k\u{1F}\":1}", .invalidString, 3),
        // invalidEscape: offset of the backslash
        Case(#""\x""#, .invalidEscape, 1),
        Case(#""\'""#, .invalidEscape, 1),
        Case(#""ab\u12G4""#, .invalidEscape, 3),
        Case(#""\uD800""#, .invalidEscape, 1),
        Case(#""\uDC00""#, .invalidEscape, 1),
        Case(#""\uDBFF\u0041""#, .invalidEscape, 1),
        Case(#""\uD800\n""#, .invalidEscape, 1),
        Case(#""\uD800x""#, .invalidEscape, 1),
        Case(#""\uD800\uZZZZ""#, .invalidEscape, 7),
        Case(#""\uD800\uD800""#, .invalidEscape, 1),
        // invalidUTF8: offset of the sequence's first byte
        Case([0x22, 0xFF, 0x22], .invalidUTF8, 1),
        Case([0x22, 0x80, 0x22], .invalidUTF8, 1),
        Case([0x22, 0xC0, 0x80, 0x22], .invalidUTF8, 1),
        Case([0x22, 0xC1, 0xBF, 0x22], .invalidUTF8, 1),
        Case([0x22, 0xE0, 0x9F, 0xBF, 0x22], .invalidUTF8, 1),
        Case([0x22, 0xED, 0xA0, 0x80, 0x22], .invalidUTF8, 1),
        Case([0x22, 0xF0, 0x8F, 0xBF, 0xBF, 0x22], .invalidUTF8, 1),
        Case([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], .invalidUTF8, 1),
        Case([0x22, 0xF5, 0x80, 0x80, 0x80, 0x22], .invalidUTF8, 1),
        Case([0x22, 0x61, 0xE2, 0x28, 0xA1, 0x22], .invalidUTF8, 2),
        Case([0x22, 0xE2, 0x82, 0x22], .invalidUTF8, 1),
        Case([0x7B, 0x22, 0xC3, 0x22, 0x3A, 0x31, 0x7D], .invalidUTF8, 2),
        // duplicateKey: offset of the second key's quote
        Case(#"{"a":1,"a":2}"#, .duplicateKey, 7),
        Case(#"{"a":1,"\u0061":2}"#, .duplicateKey, 7),
        Case(#"{"x":{"y":1,"z":{},"y":2}}"#, .duplicateKey, 19),
        Case(#"{"K":1,"\u212A":2}"#, .duplicateKey, 7),
        Case(#"{"é":1,"e\u0301":2}"#, .duplicateKey, 8),
        // tooDeep: offset of the bracket one level too deep
        Case(String(repeating: "[", count: 257) + String(repeating: "]", count: 257), .tooDeep, 256),
        Case("[[[]]]", .tooDeep, 2, limits: JSONLimits(maxDepth: 2)),
        Case(#"{"a":{"b":{}}}"#, .tooDeep, 10, limits: JSONLimits(maxDepth: 2)),
        Case("[]", .tooDeep, 0, limits: JSONLimits(maxDepth: 0)),
        // tooLarge: offset is maxBytes; reported before scanning (even for garbage)
        Case("1234", .tooLarge, 3, limits: JSONLimits(maxBytes: 3)),
        Case("}}}}", .tooLarge, 3, limits: JSONLimits(maxBytes: 3)),
        Case("", .tooLarge, 0, limits: JSONLimits(maxBytes: -1)),
        // trailingData
        Case("1 2", .trailingData, 2),
        Case("{} x", .trailingData, 3),
        Case("nullx", .trailingData, 4),
        Case("[]]", .trailingData, 2),
        Case("12a", .trailingData, 2),
        Case("0x10", .trailingData, 1),
        Case("\"a\"\"b\"", .trailingData, 3),
        Case("1\u{0}", .trailingData, 1),
    ]

    @Test(arguments: cases)
    func parseAndValidateThrowTheSameError(_ c: Case) {
        let parsed = parseError(c.input, limits: c.limits)
        #expect(parsed?.kind == c.kind)
        #expect(parsed?.offset == c.offset)
        #expect(disagreement(c.input, limits: c.limits) == nil)
    }

    @Test func nearMissesParse() throws {
        // The valid neighbours of the cases above.
        #expect(try JSONParser.parse("[[]]", limits: JSONLimits(maxDepth: 2)) == [[]])
        #expect(try JSONParser.parse("123", limits: JSONLimits(maxBytes: 3)) == 123)
        #expect(try JSONParser.parse("1", limits: JSONLimits(maxDepth: 0)) == 1)
        #expect(try JSONParser.validate(Array((String(repeating: "[", count: 256) + String(repeating: "]", count: 256)).utf8)) == .array)
        #expect(try JSONParser.parse(#"{"x":{"a":1},"a":2}"#) == ["x": ["a": 1], "a": 2])
        #expect(try JSONParser.parse(#"{"a":1,"A":2}"#) == ["a": 1, "A": 2])
        #expect(try JSONParser.parse(#""\u007F\uFFFF\uDBFF\uDFFF""#) == .string("\u{7F}\u{FFFF}\u{10FFFF}"))
        #expect(try JSONParser.parse("1.7976931348623157e308") == .double(.greatestFiniteMagnitude))
    }

    @Test func descriptionNamesOffsetAndByte() {
        #expect(parseError("[1}")?.description == "invalid JSON at byte 2: unexpected byte 0x7D")
        #expect(parseError("[1")?.description == "invalid JSON at byte 2: unexpected end of input")
        #expect(parseError("\"\u{1}\"")?.description == "invalid JSON at byte 1: unescaped control character in string (byte 0x01)")
        #expect(JSONError(kind: .tooDeep, offset: 5).description == "invalid JSON at byte 5: nesting deeper than the limit")
        #expect(JSONError.Kind.duplicateKey.rawValue == "duplicateKey")
    }

    @Test func equalityIgnoresTheInformationalByte() {
        #expect(JSONError(kind: .unexpectedByte, offset: 3, byte: 0x7D) == JSONError(kind: .unexpectedByte, offset: 3))
        #expect(JSONError(kind: .unexpectedByte, offset: 3) != JSONError(kind: .unexpectedByte, offset: 4))
        #expect(JSONError(kind: .unexpectedByte, offset: 3) != JSONError(kind: .trailingData, offset: 3))
    }

    @Test func tenThousandNestedOpenersAreRejectedNotACrash() {
        for opener in ["[", "{\"a\":", "[{\"k\":"] {
            let bytes = Array(String(repeating: opener, count: 10_000).utf8)
            let error = parseError(bytes)
            #expect(error?.kind == .tooDeep)
            #expect(disagreement(bytes) == nil)
            // With a limit high enough, the scanner (iterative) still does not crash: it runs out of input.
            let deepLimits = JSONLimits(maxDepth: 1_000_000)
            #expect(parseError(bytes, limits: deepLimits)?.kind == .unexpectedEnd)
            #expect(disagreement(bytes, limits: deepLimits) == nil)
        }
        let first = parseError(String(repeating: "[", count: 10_000))
        #expect(first == JSONError(kind: .tooDeep, offset: 256))
    }

    @Test func deepDocumentsWithinALargeLimit() throws {
        let depth = 10_000
        let bytes = Array((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8)
        #expect(try JSONParser.validate(bytes, limits: JSONLimits(maxDepth: depth)) == .array)
        #expect(parseError(bytes, limits: JSONLimits(maxDepth: depth - 1)) == JSONError(kind: .tooDeep, offset: depth - 1))
        // Building (and freeing) a value this deep is the caller's choice; 1,000 is plenty here.
        let shallower = Array(bytes[(depth - 1_000)..<(depth + 1_000)])
        let value = try JSONParser.parse(shallower, limits: JSONLimits(maxDepth: 1_000))
        #expect(JSONWriter.serialize(value) == shallower)
    }
}
