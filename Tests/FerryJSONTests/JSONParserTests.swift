import FerryJSON
import FerryTestSupport
import Testing

@Suite struct JSONParserTests {
    @Test func scalarsAndContainers() throws {
        #expect(try JSONParser.parse("null") == .null)
        #expect(try JSONParser.parse("true") == .bool(true))
        #expect(try JSONParser.parse("false") == .bool(false))
        #expect(try JSONParser.parse("\"hi\"") == .string("hi"))
        #expect(try JSONParser.parse("[]") == .array([]))
        #expect(try JSONParser.parse("{}") == .object([:]))
        #expect(try JSONParser.parse(" \t\r\n[ 1 ,\"a\" , [ ] , { } ]\n ") == [1, "a", [], [:]])
        #expect(
            try JSONParser.parse(#"{"a":{"b":[null,true,{"c":-1.5}]},"d":"e"}"#)
                == ["a": ["b": [nil, true, ["c": -1.5]]], "d": "e"])
    }

    @Test func everyEntryPointAgrees() throws {
        let text = #"{"k":[1,2.5,"é"]}"#
        let bytes = Array(text.utf8)
        let expected: JSONValue = ["k": [1, 2.5, "é"]]
        #expect(try JSONParser.parse(text) == expected)
        #expect(try JSONParser.parse(bytes) == expected)
        #expect(try JSONParser.parse(bytes[...]) == expected)
        #expect(try bytes.withUnsafeBytes { raw throws(JSONError) in try JSONParser.parse(raw) } == expected)
        #expect(try JSONParser.validate(bytes) == .object)
        #expect(try bytes.withUnsafeBytes { raw throws(JSONError) in try JSONParser.validate(raw) } == .object)
        // A substring-derived String (not necessarily native) goes through the same path.
        let embedded = "xx" + text + "yy"
        let inner = String(embedded.dropFirst(2).dropLast(2))
        #expect(try JSONParser.parse(inner) == expected)
        // Offsets in a slice count from the slice's start.
        let padded: [UInt8] = Array("[[[[".utf8) + Array("[1,}".utf8)
        #expect(throws: JSONError(kind: .unexpectedByte, offset: 3)) { try JSONParser.parse(padded[4...]) }
        #expect(throws: JSONError(kind: .empty, offset: 0)) {
            try [UInt8]().withUnsafeBytes { raw throws(JSONError) in try JSONParser.parse(raw) }
        }
    }

    @Test func validateReportsTheTopLevelKind() throws {
        let cases: [(String, JSONTopLevel)] = [
            ("null", .null), (" true", .bool), ("false ", .bool), ("-1", .number), ("2.5", .number),
            ("\"s\"", .string), ("[1]", .array), ("{\"a\":[]}", .object),
        ]
        for (text, kind) in cases {
            #expect(try JSONParser.validate(Array(text.utf8)) == kind, "\(text)")
        }
    }

    @Test(arguments: [
        ("0", JSONValue.int(0)),
        ("-0", .int(0)),
        ("7", .int(7)),
        ("-42", .int(-42)),
        ("9223372036854775807", .int(.max)),
        ("-9223372036854775808", .int(.min)),
        ("9223372036854775808", .double(9223372036854775808.0)),
        ("-9223372036854775809", .double(-9223372036854775809.0)),
        ("18446744073709551616", .double(18446744073709551616.0)),
        ("123456789012345678901234567890", .double(1.2345678901234568e29)),
        ("1.0", .double(1.0)),
        ("1e2", .double(100)),
        ("1E+2", .double(100)),
        ("1e-2", .double(0.01)),
        ("-1.5", .double(-1.5)),
        ("0.1", .double(0.1)),
        ("0.30000000000000004", .double(0.30000000000000004)),
        ("0.000123", .double(0.000123)),
        ("1.000000000000000000000001", .double(1.0)),
        ("2.2250738585072011e-308", .double(Double.leastNormalMagnitude.nextDown)),
        ("1.7976931348623157e308", .double(1.7976931348623157e308)),
        ("4.9e-324", .double(.leastNonzeroMagnitude)),
        ("1e-400", .double(0)),
        ("0e999999999999999999", .double(0)),
        ("0.0e+000", .double(0)),
        ("9007199254740993", .int(9007199254740993)),
        ("9007199254740993.0", .double(9007199254740992.0)),
        ("1e22", .double(1e22)),
        ("1e23", .double(1e23)),
        ("8.98846567431158e307", .double(8.98846567431158e307)),
    ])
    func numberClassification(text: String, expected: JSONValue) throws {
        #expect(try JSONParser.parse(text) == expected)
        #expect(try JSONParser.validate(Array(text.utf8)) == .number)
    }

    @Test func negativeZeroDoubleKeepsItsSign() throws {
        let value = try JSONParser.parse("-0.0")
        #expect(value.doubleValue?.sign == .minus)
        #expect(try JSONParser.parse("-0e5").doubleValue?.sign == .minus)
    }

    /// The fast path (exact mantissa times exact power of ten) must round exactly
    /// like the standard library's conversion.
    @Test func doublesMatchTheStandardLibrary() throws {
        var rng = SplitMix64(seed: 0xD0B1E)
        for iteration in 0..<4_000 {
            var text = Bool.random(using: &rng) ? "-" : ""
            let intDigits = Int.random(in: 1...12, using: &rng)
            text += String(Int.random(in: 1...9, using: &rng))
            for _ in 1..<intDigits { text += String(Int.random(in: 0...9, using: &rng)) }
            if Bool.random(using: &rng) {
                text += "."
                for _ in 0..<Int.random(in: 1...12, using: &rng) { text += String(Int.random(in: 0...9, using: &rng)) }
            }
            if Bool.random(using: &rng) {
                text += "e" + String(Int.random(in: -40...40, using: &rng))
            }
            let value = try JSONParser.parse(text)
            let expected = Double(text)
            #expect(value.doubleValue == expected, "iteration \(iteration): \(text)")
        }
    }

    @Test(arguments: [
        (#""\"\\\/\b\f\n\r\t""#, "\"\\/\u{8}\u{C}\n\r\t"),
        (#""\u0041\u00e9\u00E9\u4e2d""#, "Aéé中"),
        (#""\uD83D\uDE00""#, "😀"),
        (#""\ud83d\ude00x""#, "😀x"),
        (#""\uDBFF\uDFFF""#, "\u{10FFFF}"),
        (#""\uD800\uDC00""#, "\u{10000}"),
        (#""a\u0000b""#, "a\u{0}b"),
        (#""\u001F\u007f""#, "\u{1F}\u{7F}"),
        ("\"raw 😀 é 中 \u{10FFFF}\"", "raw 😀 é 中 \u{10FFFF}"),
        (#""mixed é\n😀\u00e9""#, "mixed é\n😀é"),
        (#""\\u0041""#, "\\u0041"),
    ])
    func stringsAndEscapes(json: String, expected: String) throws {
        let value = try JSONParser.parse(json)
        #expect(value == .string(expected))
        // The exact scalars, not merely canonically equivalent text.
        #expect(value.stringValue.map { Array($0.unicodeScalars) } == Array(expected.unicodeScalars))
        #expect(try JSONParser.validate(Array(json.utf8)) == .string)
    }

    @Test func escapedKeysDecode() throws {
        let value = try JSONParser.parse(#"{"\u006b\u00e9\n":1,"\uD83D\uDE00":2}"#)
        #expect(value == ["ké\n": 1, "😀": 2])
    }

    @Test func largeStrings() throws {
        let plain = String(repeating: "abcdefgh", count: 128 * 1024)  // 1 MiB
        let plainJSON = Array(("\"" + plain + "\"").utf8)
        #expect(try JSONParser.parse(plainJSON) == .string(plain))
        #expect(try JSONParser.validate(plainJSON) == .string)

        let pieces = String(repeating: "é😀\n\"\\\u{1}x", count: 20_000)
        let escaped = JSONWriter.serialize(.string(pieces))
        #expect(try JSONParser.parse(escaped) == .string(pieces))
        #expect(try JSONParser.validate(escaped) == .string)

        let manyEscapes = Array(("\"" + String(repeating: #"\u00e9\uD83D\uDE00"#, count: 20_000) + "\"").utf8)
        #expect(try JSONParser.parse(manyEscapes) == .string(String(repeating: "é😀", count: 20_000)))

        // An unterminated large string fails at the end, not before.
        #expect(parseError(Array(plainJSON.dropLast())) == JSONError(kind: .unexpectedEnd, offset: plainJSON.count - 1))
    }

    @Test func manyKeysAndDuplicateDetectionInLargeObjects() throws {
        var text = "{"
        for index in 0..<5_000 {
            text += (index == 0 ? "" : ",") + "\"key\(index)\":\(index)"
        }
        let good = Array((text + "}").utf8)
        #expect(try JSONParser.parse(good).objectValue?.count == 5_000)
        #expect(try JSONParser.validate(good) == .object)
        let duplicated = Array((text + ",\"key4999\":0}").utf8)
        #expect(parseError(duplicated)?.kind == .duplicateKey)
        #expect(disagreement(duplicated) == nil)
        // Sibling objects may reuse keys; the validator's key sets are per object.
        let siblings = Array(("[" + Array(repeating: #"{"a":1,"b":{"a":2}}"#, count: 1_000).joined(separator: ",") + "]").utf8)
        #expect(try JSONParser.validate(siblings) == .array)
        #expect(try JSONParser.parse(siblings).arrayValue?.count == 1_000)
        // One huge object followed by many small ones at the same depth.
        let mixed = Array(("[" + text + "}," + Array(repeating: #"{"k":1}"#, count: 2_000).joined(separator: ",") + "]").utf8)
        #expect(try JSONParser.validate(mixed) == .array)
    }
}
