import FerryJSON
import Testing

@Suite struct JSONWriterTests {
    static let samples: [JSONValue] = [
        .null, .bool(true), .bool(false),
        .int(0), .int(-1), .int(.max), .int(.min),
        .double(1.5), .double(-0.0), .double(2.0), .double(1e300), .double(.leastNonzeroMagnitude), .double(.greatestFiniteMagnitude),
        .double(0.1), .double(123456789012345680000.0), .double(-1e-7),
        .string(""), .string("plain"), .string("\"\\/\u{0}\u{1F}\u{7F}\n\t é 中 😀 \u{10FFFF}"),
        .array([]), .array([.null, .int(1), .array([.array([])])]),
        .object([:]), .object(["b": .int(1), "a": .object(["z": .string("y"), "": .null])]),
        ["id": "rec-1", "tags": ["x", "y"], "n": 3, "ratio": 0.25, "deleted": false, "meta": nil],
    ]

    @Test(arguments: samples)
    func everyKindRoundTrips(_ value: JSONValue) throws {
        let bytes = JSONWriter.serialize(value)
        let parsed = try JSONParser.parse(bytes)
        #expect(parsed == value)
        if case .double(let d) = value {
            #expect(parsed.doubleValue?.bitPattern == d.bitPattern, "doubles round-trip bit for bit")
        }
        // Canonical: serializing the parsed value gives the same bytes.
        #expect(JSONWriter.serialize(parsed) == bytes)
        // Unsorted output is still valid JSON for the same value.
        #expect(try JSONParser.parse(JSONWriter.serialize(value, sortedKeys: false)) == value)
    }

    @Test func corpusRoundTripsThroughTheWriter() throws {
        for text in JSONTestCorpus.documents {
            let value = try JSONParser.parse(text)
            let once = JSONWriter.serialize(value)
            let reparsed = try JSONParser.parse(once)
            #expect(reparsed == value, "\(text)")
            #expect(JSONWriter.serialize(reparsed) == once, "\(text)")
        }
    }

    @Test func keysAreSortedBytewise() throws {
        let value: JSONValue = ["b": 1, "a": 2, "A": 3, "é": 4, "aa": 5, "": 6, "😀": 7, "z": ["y": 1, "x": 2]]
        #expect(JSONWriter.string(value) == #"{"":6,"A":3,"a":2,"aa":5,"b":1,"z":{"x":2,"y":1},"é":4,"😀":7}"#)
        // Same members, different insertion order: same bytes.
        var forward: [String: JSONValue] = [:]
        var backward: [String: JSONValue] = [:]
        let keys = (0..<200).map { "k\($0 * 7919 % 1000)" }
        for key in keys { forward[key] = .string(key) }
        for key in keys.reversed() { backward[key] = .string(key) }
        #expect(JSONWriter.serialize(.object(forward)) == JSONWriter.serialize(.object(backward)))
        // Parsing text with a different member order also gives the canonical bytes.
        let a = try JSONParser.parse(#"{"y":[1,{"q":1,"p":2}],"x":true}"#)
        let b = try JSONParser.parse(#" { "x" : true , "y" : [ 1 , { "p" : 2 , "q" : 1 } ] } "#)
        #expect(JSONWriter.string(a) == #"{"x":true,"y":[1,{"p":2,"q":1}]}"#)
        #expect(JSONWriter.serialize(a) == JSONWriter.serialize(b))
    }

    @Test func stringEscaping() {
        #expect(JSONWriter.string("a\"b\\c/d") == #""a\"b\\c/d""#)
        #expect(JSONWriter.string("\u{8}\u{C}\n\r\t") == #""\b\f\n\r\t""#)
        #expect(JSONWriter.string("\u{0}\u{1}\u{1F}\u{7F}") == "\"\\u0000\\u0001\\u001f\u{7F}\"")
        #expect(JSONWriter.string("é中😀\u{2028}") == "\"é中😀\u{2028}\"")
        var out: [UInt8] = Array("prefix:".utf8)
        JSONWriter.appendString("x\ny", to: &out)
        #expect(String(decoding: out, as: UTF8.self) == #"prefix:"x\ny""#)
    }

    @Test func numbers() {
        let cases: [(JSONValue, String)] = [
            (.int(0), "0"), (.int(-1), "-1"), (.int(.max), "9223372036854775807"), (.int(.min), "-9223372036854775808"),
            (.double(1.5), "1.5"), (.double(1e300), "1e+300"), (.double(2.0), "2.0"), (.double(-0.0), "-0.0"),
            (.double(0.1), "0.1"), (.double(1e-5), "1e-05"), (.double(.leastNonzeroMagnitude), "5e-324"),
            (.double(.infinity), "null"), (.double(-.infinity), "null"), (.double(.nan), "null"),
        ]
        for (value, text) in cases {
            #expect(JSONWriter.string(value) == text)
        }
    }

    @Test func appendKeepsWhatIsAlreadyThere() {
        var out: [UInt8] = Array("[".utf8)
        JSONWriter.append(["b": 1, "a": [true, nil]], to: &out)
        out.append(UInt8(ascii: "]"))
        #expect(String(decoding: out, as: UTF8.self) == #"[{"a":[true,null],"b":1}]"#)
        #expect(JSONWriter.string([1, 2]) == String(decoding: JSONWriter.serialize([1, 2]), as: UTF8.self))
    }
}
