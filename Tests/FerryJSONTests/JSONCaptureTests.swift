import FerryJSON
import FerryTestSupport
import Foundation
import Testing

/// Capturing objects as text (`parse(_:limits:capturing:)`), held against the plain parser on
/// every corpus document and on seeded mutants of them: the same value and errors, but for
/// duplicate keys and numbers out of range inside a captured object, which mark that capture
/// as not clean instead of failing the document.
@Suite struct JSONCaptureTests {
    static let paths: [[JSONPathComponent]] = [[.key("p")], [.key("a"), .anyElement]]

    /// `{"a":[D,D],"p":D,"q":{"p":D}}`: D is captured three times, not under `q`.
    static func wrap(_ d: [UInt8]) -> [UInt8] {
        Array(#"{"a":["#.utf8) + d + [UInt8(ascii: ",")] + d + Array(#"],"p":"#.utf8) + d + Array(#","q":{"p":"#.utf8) + d + Array("}}".utf8)
    }

    /// The capture parse agrees with `parse` (same error, or a value that materializes to the
    /// same one), captures exactly the objects at the paths, and their ranges hold them.
    static func checkCapture(_ bytes: [UInt8], limits: JSONLimits, context: String) {
        let plain = parseResult(bytes, limits: limits)
        let captured: Result<(value: JSONValue, captures: [JSONCapture]), JSONError> = Result { () throws(JSONError) in
            try JSONParser.parse(bytes, limits: limits, capturing: paths)
        }
        switch (plain, captured) {
        case (.failure(let a), .failure(let b)):
            // The same error, or the plain parse stopped earlier at what a capture leaves to
            // its reader, and the capture parse went on to a later error.
            #expect(a == b || ([.duplicateKey, .invalidNumber].contains(a.kind) && b.offset > a.offset), "\(a) vs \(b); \(context)")
        case (.failure(let a), .success(let (_, captures))):
            // Only what a capture leaves to its reader, and only inside a captured object, whose
            // text then fails to parse with that error.
            let inside = captures.first { $0.range.contains(a.offset) }
            #expect([.duplicateKey, .invalidNumber].contains(a.kind) && inside != nil, "\(a); \(context)")
            if let inside {
                #expect(throws: JSONError.self, "\(context)") { try JSONParser.parse(bytes[inside.range], limits: limits) }
            }
            checkFlags(captures, bytes: bytes, limits: limits, context: context)
        case (.success(let value), .success(let (capturedValue, captures))):
            #expect((try? JSONCapture.materialize(capturedValue, captures: captures, bytes: bytes)) == value, "\(context)")
            var expected: [JSONValue] = []
            if case .array(let items)? = value["a"] { expected += items.filter { if case .object = $0 { true } else { false } } }
            if case .object? = value["p"] { expected.append(value["p"]!) }
            #expect(captures.count == expected.count, "\(context)")
            for (i, capture) in captures.enumerated() {
                #expect(bytes[capture.range].first == UInt8(ascii: "{") && bytes[capture.range].last == UInt8(ascii: "}"), "\(context)")
                if i < expected.count { #expect((try? JSONParser.parse(bytes[capture.range])) == expected[i], "\(context)") }
            }
            checkFlags(captures, bytes: bytes, limits: limits, context: context)
            // Nothing under q is a placeholder.
            if case .object(let q)? = capturedValue["q"], let inner = q["p"] { #expect(JSONCapture.index(of: inner) == nil, "\(context)") }
        default:
            Issue.record("parse and the capture parse disagree: \(plain) vs \(captured); \(context)")
        }
    }

    /// A capture is clean exactly when its text passes `validate`, and then its depth is the
    /// nesting depth of its value.
    static func checkFlags(_ captures: [JSONCapture], bytes: [UInt8], limits: JSONLimits, context: String) {
        for capture in captures {
            let valid = (try? JSONParser.validate(bytes[capture.range], limits: limits)) != nil
            #expect(capture.isClean == valid, "clean \(capture.isClean), valid \(valid); \(context)")
            if valid, let value = try? JSONParser.parse(bytes[capture.range], limits: limits) {
                #expect(capture.depth == depth(of: value), "\(context)")
            }
        }
    }

    /// The nesting depth of a value: a container counts 1, a scalar 0.
    static func depth(of value: JSONValue) -> Int {
        switch value {
        case .object(let members): 1 + (members.values.map(depth(of:)).max() ?? 0)
        case .array(let items): 1 + (items.map(depth(of:)).max() ?? 0)
        default: 0
        }
    }

    /// A duplicate key or a number out of range inside a capture leaves the document readable
    /// and marks that capture alone as not clean; depths are counted as the store counts them.
    @Test func problemsInsideACaptureMarkItNotClean() throws {
        let text = #"{"a":[{"k":1,"k":2},{"n":1e400},{"x":[{"y":{}}]}],"p":{"ok":[1,2]}}"#
        let (_, captures) = try JSONParser.parse(Array(text.utf8), capturing: Self.paths)
        #expect(captures.map(\.isClean) == [false, false, true, true])
        #expect(captures[2].depth == 4 && captures[3].depth == 2)
        // Outside a capture the same problems fail the document, as before.
        #expect(throws: JSONError.self) { try JSONParser.parse(Array(#"{"q":{"k":1,"k":2},"p":{}}"#.utf8), capturing: Self.paths) }
        #expect(throws: JSONError.self) { try JSONParser.parse(Array(#"{"q":1e400,"p":{}}"#.utf8), capturing: Self.paths) }
    }

    static var documents: [[UInt8]] {
        JSONTestCorpus.byteDocuments + [
            #"{"done":false,"notes":"nnn","priority":3,"tags":["shopping","weekly"],"title":"Buy oat milk"}"#,
            #"{"title":"unsorted","done":false}"#, #"{"a":1, "b":2}"#, #"{"a":-0}"#, #"{"a":"x\/y"}"#,
            #"{"a":"\u0001\u001f\u007f"}"#, #"{"a":"\u001F"}"#, #"{"a":"\u000a"}"#, #"{"a":"é\u00e9"}"#,
            #"{"":1,"a":{"":[{},[]]}}"#, #"{"b":1,"a":2}"#, #"{"a":1,"a\u0000":2}"#, #"{"a":[1,2,{"z":null,"y":true}]}"#,
            #"{"n":1000000000000000000,"m":-999999999999999999}"#, #"{"k":9223372036854775807}"#,
        ].map { Array($0.utf8) }
    }

    @Test func corpusDocumentsAreCaptured() {
        for d in Self.documents {
            let context = "input: \(String(decoding: d, as: UTF8.self))"
            Self.checkCapture(Self.wrap(d), limits: .default, context: context)
        }
    }

    @Test func mutantsAgreeWithTheParser() {
        var rng = SplitMix64(seed: JSONFuzzTests.baseSeed ^ 0xCA97)
        let corpus = Self.documents
        let limits = JSONLimits(maxBytes: 1 << 16, maxDepth: 12)
        for iteration in 0..<5_000 {
            var d = corpus[Int.random(in: 0..<corpus.count, using: &rng)]
            for _ in 0..<Int.random(in: 1...3, using: &rng) { JSONFuzzTests.mutate(&d, using: &rng) }
            let context = "iteration \(iteration), input: \(hexDump(d))"
            Self.checkCapture(Self.wrap(d), limits: limits, context: context)
        }
    }

    /// The capture parse takes the same input split anywhere: every prefix fails as `parse` does.
    @Test func everyPrefixFailsAsParseFails() {
        let bytes = Self.wrap(Array(#"{"done":false,"tags":["a"],"t":{"x":1}}"#.utf8))
        for cut in 0..<bytes.count {
            Self.checkCapture(Array(bytes[..<cut]), limits: .default, context: "prefix of \(cut) bytes")
        }
    }
}
