import FerryJSON
import FerryStore
import Foundation
import Testing
@testable import FerryDaemon

/// The direct reading of Put and PutMany parameters: whatever it reads, it reads as the
/// ordinary decoding does (here, a reference built on `JSONParser.parse`); anything unusual it
/// leaves to that decoding (nil); no input makes it read outside its buffer.
@Suite struct PutParametersDecoderTests {
    static let limits = JSONLimits()
    static let maxPayloadDepth = 64

    static func putMany(_ text: String, limits: JSONLimits = limits, maxPayloadDepth: Int = maxPayloadDepth) -> PutParametersDecoder.Parameters? {
        Array(text.utf8).withUnsafeBufferPointer { PutParametersDecoder.putMany($0, limits: limits, maxPayloadDepth: maxPayloadDepth) }
    }

    static func put(_ text: String, limits: JSONLimits = limits, maxPayloadDepth: Int = maxPayloadDepth) -> PutParametersDecoder.Parameters? {
        Array(text.utf8).withUnsafeBufferPointer { PutParametersDecoder.put($0, limits: limits, maxPayloadDepth: maxPayloadDepth) }
    }

    /// What the ordinary decoding gives for a record object the direct reading accepted: its
    /// strings, and its payload's exact text (found by parsing the text up to each payload).
    static func reference(_ text: String, many: Bool) throws -> PutParametersDecoder.Parameters {
        let value = try JSONParser.parse(text)
        guard case .object(let parameters) = value else { throw CocoaError(.coderInvalidValue) }
        let items: [JSONValue] = many ? (parameters["records"]?.arrayValue ?? []) : [value]
        // Payload texts in document order: each payload object's text, found by its key.
        let payloads = payloadTexts(text)
        var requests: [PutRequest] = []
        for (i, item) in items.enumerated() {
            let o = item.objectValue ?? [:]
            #expect(JSONParser.parseOrNil(payloads[i]) == o["payload"], "payload \(i) of \(text)")
            requests.append(PutRequest(entity: o["entity"]?.stringValue ?? "", id: o["id"]?.stringValue, payload: payloads[i],
                                       attachments: o["attachments"]?.arrayValue?.compactMap(\.stringValue) ?? [], payloadIsWellFormed: true))
        }
        return PutParametersDecoder.Parameters(space: parameters["space"]?.stringValue, requests: requests)
    }

    /// The texts of the objects that follow each `"payload"` key (the test inputs hold no such
    /// text elsewhere).
    static func payloadTexts(_ text: String) -> [String] {
        let bytes = Array(text.utf8)
        let marker = Array("\"payload\"".utf8)
        var out: [String] = []
        var i = 0
        while i + marker.count <= bytes.count {
            guard bytes[i..<(i + marker.count)].elementsEqual(marker) else { i += 1; continue }
            var start = i + marker.count
            while start < bytes.count, [UInt8(ascii: " "), UInt8(ascii: ":"), UInt8(ascii: "\n")].contains(bytes[start]) { start += 1 }
            // The shortest text from `start` that parses as an object.
            var end = start + 1
            while end <= bytes.count, (try? JSONParser.parse(Array(bytes[start..<end]))) == nil { end += 1 }
            out.append(String(decoding: bytes[start..<min(end, bytes.count)], as: UTF8.self))
            i = end
        }
        return out
    }

    static let accepted: [String] = [
        #"{"records":[]}"#,
        #"{"records":[{"entity":"note","payload":{}}]}"#,
        #"{"records":[{"entity":"note","id":"N1","payload":{"title":"Buy milk","done":false,"n":1.5e3,"tags":["a","b"],"x":null}}]}"#,
        #"{"space":"team","records":[{"payload":{"a":{"b":[1,2,{"c":"\u00e9\n"}]}},"id":"I-1","entity":"item","attachments":["ab","cd"]}]}"#,
        #"{"records":[{"entity":"a","payload":{"k":"v"}},{"entity":"b","payload":{"k":"}]{[\"\\"},"attachments":[]}],"space":"s"}"#,
        " {\n \"records\" : [ { \"entity\" : \"e\" , \"payload\" : { \"a\" : 1 } } ] } ",
        #"{"records":[{"entity":"note","payload":{"emoji":"😀","ü":"ß"}}]}"#,
    ]

    @Test func readsWhatTheOrdinaryDecodingReads() throws {
        for text in Self.accepted {
            let direct = try #require(Self.putMany(text), "not read: \(text)")
            #expect(direct == (try Self.reference(text, many: true)), "\(text)")
        }
        let put = #"{"entity":"note","id":"N1","payload":{"a":[1,{"b":2}]},"attachments":["ff"],"space":"team"}"#
        let direct = try #require(Self.put(put))
        #expect(direct == (try Self.reference(put, many: false)))
        #expect(Self.put(#"{"payload":{},"entity":"e"}"#) == PutParametersDecoder.Parameters(
            space: nil, requests: [PutRequest(entity: "e", payload: "{}", payloadIsWellFormed: true)]))
    }

    /// Everything the ordinary decoding reads differently, refuses, or answers with an error of
    /// its own is left to it.
    @Test func leavesEverythingElseToTheOrdinaryDecoding() {
        let left = [
            #"{}"#, #"[]"#, #""#, #"{"records":null}"#, #"{"records":{}}"#, #"{"records":[null]}"#,
            #"{"records":[{}]}"#,                                                   // entity and payload missing
            #"{"records":[{"entity":"e"}]}"#,                                       // payload missing
            #"{"records":[{"payload":{}}]}"#,                                       // entity missing
            #"{"records":[{"entity":"e","payload":[]}]}"#,                          // payload not an object
            #"{"records":[{"entity":"e","payload":"{}"}]}"#,
            #"{"records":[{"entity":"e","id":null,"payload":{}}]}"#,                // null rather than absent
            #"{"records":[{"entity":"e","payload":{},"attachments":null}]}"#,
            #"{"records":[{"entity":"e","payload":{},"extra":1}]}"#,                // unknown member
            #"{"records":[{"entity":"e","payload":{},"space":"s"}]}"#,              // space is PutMany's, not a record's
            #"{"records":[],"more":true}"#,
            #"{"records":[{"entity":"e","entity":"f","payload":{}}]}"#,             // duplicate member
            #"{"records":[],"records":[]}"#,
            #"{"records":[{"entity":"e\u0041","payload":{}}]}"#,                    // an escape
            #"{"records":[{"entity":"é","payload":{}}]}"#,                          // not ASCII
            "{\"records\":[{\"entity\":\"a\tb\",\"payload\":{}}]}",                 // a control character
            #"{"records":[{"entity":"e","id":5,"payload":{}}]}"#,
            #"{"records":[{"entity":"e","payload":{"a":1,"a":2}}]}"#,               // a duplicate key in the payload
            #"{"records":[{"entity":"e","payload":{"a":1e400}}]}"#,                 // a number out of range
            #"{"records":[{"entity":"e","payload":{"a":01}}]}"#,                    // not JSON
            #"{"records":[{"entity":"e","payload":{"a":1,}}]}"#,
            #"{"records":[{"entity":"e","payload":{"a":[1}}]}"#,
            #"{"records":[{"entity":"e","payload":{"a":"\x"}}]}"#,
            #"{"records":[{"entity":"e","payload":{}}]} x"#,                        // trailing bytes
            #"{"records":[{"entity":"e","payload":{}}],}"#,
            #"{"records":[{"entity":"e","payload":{}},]}"#,
        ]
        for text in left { #expect(Self.putMany(text) == nil, "\(text)") }
        #expect(Self.put(#"{"entity":"e","payload":{},"records":[]}"#) == nil)
        #expect(Self.put(#"{"entity":"e","payload":{},"space":null}"#) == nil)
        // Invalid UTF-8 inside a payload string.
        var bytes = Array(#"{"records":[{"entity":"e","payload":{"a":"xx"}}]}"#.utf8)
        bytes[bytes.count - 6] = 0xff
        #expect(bytes.withUnsafeBufferPointer { PutParametersDecoder.putMany($0, limits: Self.limits, maxPayloadDepth: 64) } == nil)
    }

    /// A payload deeper than the store allows, or deeper than the message limit allows at its
    /// place in the message, is left to the ordinary decoding (which answers with its error).
    @Test func depthLimits() {
        func nested(_ depth: Int) -> String { String(repeating: #"{"a":"#, count: depth - 1) + "{}" + String(repeating: "}", count: depth - 1) }
        let record = { (payload: String) in #"{"records":[{"entity":"e","payload":"# + payload + "}]}" }
        #expect(Self.putMany(record(nested(64)))?.requests.first?.payload == nested(64))
        #expect(Self.putMany(record(nested(65))) == nil)
        // Message depth 20: a PutMany payload sits 4 deep, so 16 levels fit; Put's sits 2 deep.
        let shallow = JSONLimits(maxBytes: 1 << 20, maxDepth: 20)
        #expect(Self.putMany(record(nested(16)), limits: shallow) != nil)
        #expect(Self.putMany(record(nested(17)), limits: shallow) == nil)
        #expect(Self.put(#"{"entity":"e","payload":"# + nested(18) + "}", limits: shallow) != nil)
        #expect(Self.put(#"{"entity":"e","payload":"# + nested(19) + "}", limits: shallow) == nil)
    }

    /// Cut anywhere, a call's parameters are not read (a cut inside one is never a whole
    /// call); changed at any byte to any of a set of troublesome bytes, what is read is what
    /// the ordinary decoding reads. Nothing reads outside the buffer (the buffer is exactly
    /// the input, so an overrun would trap).
    @Test func everyCutAndEveryChangedByte() throws {
        let text = Array(Self.accepted[3].utf8)
        for cut in 0..<text.count {
            let prefix = Array(text[..<cut])
            #expect(prefix.withUnsafeBufferPointer { PutParametersDecoder.putMany($0, limits: Self.limits, maxPayloadDepth: 64) } == nil,
                    "cut at \(cut)")
        }
        let replacements: [UInt8] = [0x00, 0x0a, 0x20, 0x22, 0x2c, 0x3a, 0x5b, 0x5c, 0x5d, 0x7b, 0x7d, 0x31, 0x61, 0x80, 0xff]
        var read = 0, left = 0
        for position in text.indices {
            for replacement in replacements where replacement != text[position] {
                var changed = text
                changed[position] = replacement
                let decoded = changed.withUnsafeBufferPointer { PutParametersDecoder.putMany($0, limits: Self.limits, maxPayloadDepth: 64) }
                guard let parameters = decoded else { left += 1; continue }
                read += 1
                let changedText = String(decoding: changed, as: UTF8.self)
                #expect(parameters == (try Self.reference(changedText, many: true)), "byte \(position) -> \(replacement): \(changedText)")
            }
        }
        // Both outcomes were exercised many times.
        #expect(read > 100 && left > 100, "read \(read), left \(left)")
    }
}

private extension JSONParser {
    static func parseOrNil(_ text: String) -> JSONValue? { try? parse(text) }
}
