import FerryJSON
import Testing

@testable import FerryVarlink

/// Methods with a direct decoder (`VarlinkMethod.direct`): a call in the exact common shape
/// reaches the handler as the decoder's value; any other shape, or a call the decoder declines,
/// takes the ordinary decoding, validation and errors.
@Suite struct VarlinkDirectDecodingTests {
    static let definition = """
        interface org.ferry.direct

        method Write(name: string) -> ()
        method Plain(name: string) -> ()
        """

    /// Reads `{"name":"…"}` with a name of letters only; declines anything else.
    static let decoder: VarlinkDirectDecoder = { bytes, _ in
        let text = String(decoding: bytes, as: UTF8.self)
        guard text.hasPrefix(#"{"name":""#), text.hasSuffix(#""}"#) else { return nil }
        let name = text.dropFirst(9).dropLast(2)
        return name.allSatisfy(\.isLetter) && !name.isEmpty ? String(name) : nil
    }

    static func service() throws -> VarlinkService {
        var service = VarlinkService(vendor: "Ferry", product: "FerryVarlinkTests", version: "0.1", url: "https://ferry.invalid")
        try service.register(definition, methods: [
            "Write": .batched(direct: decoder) { calls in calls.map { _ in .success(.values([:])) } },
            "Plain": .batched { calls in calls.map { _ in .success(.values([:])) } },
        ])
        return service
    }

    static func prepared(_ text: String, outputClosed: Bool = false) throws -> PreparedCall {
        try service().prepare(Array(text.utf8), peer: nil, isOutputClosed: outputClosed, limits: .default).0
    }

    @Test func theCommonShapeIsReadDirectly() throws {
        guard case .batch(let key, _, let call) = try Self.prepared(#"{"method":"org.ferry.direct.Write","parameters":{"name":"abc"}}"#) else {
            Issue.record("not queued for its batch handler")
            return
        }
        #expect(key == "org.ferry.direct.Write" && call.interface == "org.ferry.direct" && call.method == "Write")
        #expect(call.direct as? String == "abc" && call.parameters.isEmpty && !call.oneway && !call.more)
    }

    /// Whitespace between the tokens is the same shape: Python's json.dumps (the PyPI varlink
    /// client) writes `{"method": "…", "parameters": {…}}`, others indent.
    @Test func theCommonShapeWithWhitespaceIsReadDirectly() throws {
        let spaced = [
            #"{"method": "org.ferry.direct.Write", "parameters": {"name":"abc"}}"#,
            #"{ "method":"org.ferry.direct.Write","parameters":{"name":"abc"}}"#,
            #"{"method":"org.ferry.direct.Write","parameters":{"name":"abc"} }"#,
            " \t{\n  \"method\" :\r\n \"org.ferry.direct.Write\" ,\n  \"parameters\" :  {\"name\":\"abc\"}\n}\n ",
        ]
        for text in spaced {
            guard case .batch(let key, _, let call) = try Self.prepared(text) else {
                Issue.record("\(text): not queued for its batch handler")
                continue
            }
            #expect(key == "org.ferry.direct.Write" && call.direct as? String == "abc" && call.parameters.isEmpty, "\(text)")
        }
    }

    /// The shape's ranges at every place whitespace may go, and its refusals.
    @Test func theShapeFindsTheNameAndTheParameters() {
        func shape(_ text: String) -> (name: String, parameters: String)? {
            let bytes = Array(text.utf8)
            return bytes.withUnsafeBufferPointer { b in
                DirectCallShape(b).map { (String(decoding: b[$0.name], as: UTF8.self), String(decoding: b[$0.parameters], as: UTF8.self)) }
            }
        }
        let tokens = ["{", #""method""#, ":", #""a.b.C""#, ",", #""parameters""#, ":", #"{"x": [1, 2]}"#, "}"]
        for gap in 0...tokens.count {
            for space in [" ", "\t", "\n", "\r", " \n\t "] {
                var text = ""
                for (k, token) in tokens.enumerated() { text += (k == gap ? space : "") + token }
                if gap == tokens.count { text += space }
                let found = shape(text)
                #expect(found?.name == "a.b.C" && found?.parameters == #"{"x": [1, 2]}"#, "\(text.debugDescription)")
            }
        }
        for text in [
            #"{"method":"a.b.C","parameters":}"#,                // no parameters
            #"{"method":"a.b\u0043","parameters":{}}"#,         // an escape in the name
            #"{"method":"a.b.C""parameters":{}}"#,               // no comma
            #"{"method":"a.b.C","parameters"{}}"#,               // no colon
            #"{"parameters":{},"method":"a.b.C"}"#,              // reordered
            #"["method","a.b.C"]"#,
            "{\"method\":\"a.b\u{01}C\",\"parameters\":{}}",  // a control byte in the name
            "",
        ] {
            #expect(shape(text) == nil, "\(text.debugDescription)")
        }
        // A member after the parameters stays inside their range, and a missing closing brace
        // takes the parameters' own: what is left is no object, for the decoder to decline.
        #expect(shape(#"{"method":"a.b.C","parameters":{},"more":true}"#)?.parameters == #"{},"more":true"#)
        #expect(shape(#"{"method":"a.b.C","parameters":{}"#)?.parameters == "{")
    }

    @Test func everyOtherShapeTakesTheOrdinaryDecoding() throws {
        let ordinary = [
            #"{"method":"org.ferry.direct.Write","parameters":{"name":"a1"}}"#,              // declined by the decoder
            #"{"parameters":{"name":"abc"},"method":"org.ferry.direct.Write"}"#,             // members reordered
            #"{"method":"org.ferry.direct.Write","parameters":{"name":"abc"},"more":false}"#,
            #"{"method":"org.ferry.direct.Wr\u0069te","parameters":{"name":"abc"}}"#,       // an escape in the name
            #"{"method":"org.ferry.direct.Plain","parameters":{"name":"abc"}}"#,             // no direct decoder
        ]
        for text in ordinary {
            guard case .batch(_, _, let call) = try Self.prepared(text) else {
                Issue.record("\(text): not queued")
                continue
            }
            #expect(call.direct == nil && call.parameters["name"] != nil, "\(text)")
        }
        // Oneway goes the ordinary way too, and is answered nothing.
        guard case .batch(_, _, let oneway) = try Self.prepared(#"{"method":"org.ferry.direct.Write","parameters":{"name":"abc"},"oneway":true}"#) else {
            Issue.record("oneway call not queued")
            return
        }
        #expect(oneway.oneway && oneway.direct == nil)
        // The ordinary decoding's errors are the same as ever.
        guard case .done(.finished(let reply?)) = try Self.prepared(#"{"method":"org.ferry.direct.Write","parameters":{"name":5}}"#) else {
            Issue.record("a wrong type was not answered")
            return
        }
        #expect(String(decoding: reply, as: UTF8.self).contains("InvalidParameter"))
        // Cut anywhere, the common shape is never read directly.
        let whole = Array(#"{"method":"org.ferry.direct.Write","parameters":{"name":"abc"}}"#.utf8)
        let service = try Self.service()
        for cut in 0..<whole.count {
            if case .batch(_, _, let call) = service.prepare(Array(whole[..<cut]), peer: nil, isOutputClosed: false, limits: .default).0 {
                #expect(call.direct == nil, "cut at \(cut)")
            }
        }
    }

    /// A client that hung up before its call ran gets nothing run, as with the ordinary path.
    @Test func aClosedClientGetsNothingRun() throws {
        guard case .done(.finished(nil)) = try Self.prepared(#"{"method":"org.ferry.direct.Write","parameters":{"name":"abc"}}"#, outputClosed: true) else {
            Issue.record("ran for a closed client")
            return
        }
    }
}
