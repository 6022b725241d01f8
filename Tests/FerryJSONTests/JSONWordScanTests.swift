import FerryJSON
import Testing

/// The string scanner reads eight plain bytes at a time, and validation keeps plain-ASCII keys
/// as bytes: what each byte means must not depend on where it falls in a word, and a key must
/// be a duplicate exactly when String equality says so. Every case is checked against the
/// outcome written out by hand, and parse and validate must agree on it.
@Suite struct JSONWordScanTests {
    /// A string literal of `count` plain bytes ("a", "b", ...) with `special` at `at`.
    static func literal(count: Int, at: Int, special: [UInt8]) -> [UInt8] {
        var content = (0..<count).map { UInt8(ascii: "a") + UInt8($0 % 26) }
        content.replaceSubrange(at..<at, with: special)
        return [UInt8(ascii: "\"")] + content + [UInt8(ascii: "\"")]
    }

    static func expectAgreement(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(disagreement(bytes) == nil, "\(String(decoding: bytes, as: UTF8.self))", sourceLocation: sourceLocation)
    }

    @Test func plainStringsOfEveryLengthReadWhole() throws {
        for count in 0...40 {
            let bytes = Self.literal(count: count, at: 0, special: [])
            #expect(try JSONParser.parse(bytes) == .string(String(decoding: bytes.dropFirst().dropLast(), as: UTF8.self)))
            Self.expectAgreement(bytes)
            // Cut before the closing quote: the end is found wherever it falls.
            #expect(parseError(Array(bytes.dropLast())) == JSONError(kind: .unexpectedEnd, offset: count + 1))
        }
    }

    @Test func aByteThatEndsTheFastPathIsSeenAtEveryPlaceInAWord() throws {
        for count in 0...20 {
            for at in 0...count {
                let offset = 1 + at   // after the opening quote
                // A control character is refused where it stands.
                for control: UInt8 in [0x00, 0x09, 0x1F] {
                    let bytes = Self.literal(count: count, at: at, special: [control])
                    #expect(parseError(bytes) == JSONError(kind: .invalidString, offset: offset, byte: control), "count \(count) at \(at)")
                    Self.expectAgreement(bytes)
                }
                // A byte that is not UTF-8 is refused where it stands; a good sequence is read.
                for bad: UInt8 in [0x80, 0xC0, 0xFF] {
                    let bytes = Self.literal(count: count, at: at, special: [bad])
                    #expect(parseError(bytes) == JSONError(kind: .invalidUTF8, offset: offset, byte: bad), "count \(count) at \(at)")
                    Self.expectAgreement(bytes)
                }
                for good in ["é", "€", "😀"] {
                    let bytes = Self.literal(count: count, at: at, special: Array(good.utf8))
                    #expect(try JSONParser.parse(bytes) == .string(String(decoding: bytes.dropFirst().dropLast(), as: UTF8.self)))
                    Self.expectAgreement(bytes)
                }
                // An escape is decoded, and a quote inside ends the string there.
                let escaped = Self.literal(count: count, at: at, special: Array(#"\n\""#.utf8))
                var text = String(decoding: escaped.dropFirst().dropLast(), as: UTF8.self)
                text = text.replacingOccurrences(of: #"\n\""#, with: "\n\"")
                #expect(try JSONParser.parse(escaped) == .string(text), "count \(count) at \(at)")
                Self.expectAgreement(escaped)
                let early = Self.literal(count: count, at: at, special: [UInt8(ascii: "\"")])
                if at == count {
                    #expect(parseError(early) == JSONError(kind: .trailingData, offset: offset + 1, byte: UInt8(ascii: "\"")))
                } else {
                    #expect(parseError(early) != nil, "count \(count) at \(at)")
                }
                Self.expectAgreement(early)
            }
        }
    }

    @Test func keysInPlaceAreDuplicatesExactlyWhenTheirStringsAreEqual() {
        // (document, offset of the duplicate's quote or nil)
        let cases: [(String, Int?)] = [
            (#"{"a":1,"a":2}"#, 7),
            (#"{"":1,"":2}"#, 6),
            (#"{"ab":1,"abc":2,"abd":3}"#, nil),
            (#"{"abc":1,"ab":2}"#, nil),
            (#"{"a":1,"\u0061":2}"#, 7),
            (#"{"\u0061":1,"a":2}"#, 12),
            (#"{"K":1,"\u212A":2}"#, 7),
            ("{\"K\":1,\"\u{212A}\":2}", 7),   // U+212A as UTF-8, after the ASCII K
            ("{\"\u{212A}\":1,\"K\":2}", 9),   // and before it
            (#"{"é":1,"e\u0301":2}"#, 8),
            (#"{"x":{"a":1},"y":{"a":1},"a":{"x":1}}"#, nil),
            (#"{"x":{"a":1,"b":{"a":1},"a":2}}"#, 24),
            (#"{"longer-than-a-word":1,"longer-than-a-word":2}"#, 24),
            (#"{"longer-than-a-word":1,"longer-than-a-wore":2}"#, nil),
        ]
        for (text, offset) in cases {
            let bytes = Array(text.utf8)
            #expect(parseError(bytes) == offset.map { JSONError(kind: .duplicateKey, offset: $0) }, "\(text)")
            Self.expectAgreement(bytes)
        }
    }

    @Test func largeObjectsFindDuplicatesOfEveryKind() {
        // Past twelve keys an object also keeps a set; the duplicate comes last, first or in
        // another form (escaped, or canonically equal).
        let names = (0..<20).map { "key\($0)" }
        func object(_ keys: [String]) -> [UInt8] {
            Array(("{" + keys.enumerated().map { "\"\($1)\":\($0)" }.joined(separator: ",") + "}").utf8)
        }
        Self.expectAgreement(object(names))
        #expect(parseError(object(names)) == nil)
        for duplicate in [#"key19"#, #"key0"#, #"\u006bey5"#, "key13"] {
            let bytes = object(names + [duplicate])
            let offset = object(names).count   // where the added key's quote lands (after the comma)
            #expect(parseError(bytes) == JSONError(kind: .duplicateKey, offset: offset), "\(duplicate)")
            Self.expectAgreement(bytes)
        }
        let kelvin = (0..<14).map { "k\($0)" } + ["K"]
        let bytes = object(kelvin + ["\u{212A}"])
        #expect(parseError(bytes) == JSONError(kind: .duplicateKey, offset: object(kelvin).count))
        Self.expectAgreement(bytes)
    }
}
