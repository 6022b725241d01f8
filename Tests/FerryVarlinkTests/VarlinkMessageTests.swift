import FerryJSON
import Testing

@testable import FerryVarlink

@Suite struct VarlinkMessageTests {
    private func call(_ text: String) throws(VarlinkMessageError) -> VarlinkCallMessage {
        try VarlinkCallMessage.decode(Array(text.utf8))
    }

    @Test func decodesAFullCall() throws {
        let message = try call(
            #"{"method":"org.example.more.Ping","parameters":{"ping":"x"},"oneway":false,"more":true,"upgrade":null,"org.vendor":{"x":1}}"#)
        #expect(message.method == "org.example.more.Ping")
        #expect(message.interfaceName == "org.example.more")
        #expect(message.methodName == "Ping")
        #expect(message.parameters == ["ping": "x"])
        #expect(message.more && !message.oneway && !message.upgrade)
    }

    @Test func absentOrNullParametersMeanEmpty() throws {
        #expect(try call(#"{"method":"a.b.C"}"#).parameters == [:])
        #expect(try call(#"{"method":"a.b.C","parameters":null}"#).parameters == [:])
    }

    @Test func rejectsMalformedCalls() {
        #expect(throws: VarlinkMessageError.missingField("method")) { try call(#"{"parameters":{}}"#) }
        #expect(throws: VarlinkMessageError.wrongFieldType(field: "method", expected: "a string")) {
            try call(#"{"method":7}"#)
        }
        #expect(throws: VarlinkMessageError.invalidMethodName("Ping")) { try call(#"{"method":"Ping"}"#) }
        #expect(throws: VarlinkMessageError.invalidMethodName("org.example.ping")) {
            try call(#"{"method":"org.example.ping"}"#)
        }
        #expect(throws: VarlinkMessageError.wrongFieldType(field: "parameters", expected: "an object")) {
            try call(#"{"method":"a.b.C","parameters":[1]}"#)
        }
        #expect(throws: VarlinkMessageError.wrongFieldType(field: "more", expected: "a boolean")) {
            try call(#"{"method":"a.b.C","more":"yes"}"#)
        }
        #expect(throws: VarlinkMessageError.notAnObject("array")) { try call("[1,2]") }
        #expect(throws: VarlinkMessageError.self) { try call("hello") }
        #expect(throws: VarlinkMessageError.self) { try call("") }
    }

    @Test func malformedCallsNameTheFieldForInvalidParameter() {
        #expect(VarlinkMessageError.missingField("method").offendingField == "method")
        #expect(VarlinkMessageError.invalidMethodName("x").offendingField == "method")
        #expect(VarlinkMessageError.wrongFieldType(field: "oneway", expected: "").offendingField == "oneway")
        #expect(VarlinkMessageError.notAnObject("array").offendingField == nil)
    }

    @Test func deepNestingIsATypedError() {
        let deep = #"{"method":"a.b.C","parameters":{"v":"# + String(repeating: "[", count: 10_000)
            + String(repeating: "]", count: 10_000) + "}}"
        #expect {
            try call(deep)
        } throws: { error in
            guard case let .invalidJSON(json) = error as? VarlinkMessageError else { return false }
            return json.kind == .tooDeep
        }
    }

    @Test func callRoundTripsWithOnlyTrueFlags() throws {
        let original = VarlinkCallMessage(method: "org.example.X", parameters: ["a": [1, 2.5, "s", nil]], oneway: true)
        var bytes = original.encoded()
        #expect(bytes.last == 0)
        bytes.removeLast()
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(!text.contains("more") && !text.contains("upgrade") && text.contains(#""oneway":true"#))
        #expect(try VarlinkCallMessage.decode(bytes) == original)
    }

    /// Verbatim parameters go out byte for byte, beside the others, with or without flags and
    /// other parameters, and the message reads back as one call with all of them.
    @Test func verbatimParametersAreSentAsGiven() throws {
        let payload = #"{ "b": 1.50, "a": 18446744073709551615 }"#
        for (parameters, more) in [([String: JSONValue](), false), (["entity": "note", "z": [1, nil]], true)] {
            var message = VarlinkCallMessage(method: "io.ferry.Store.Put", parameters: parameters, more: more)
            message.verbatimParameters["payload"] = Array(payload.utf8)
            message.verbatimParameters["also"] = Array("[1E2]".utf8)
            var bytes = message.encoded()
            #expect(bytes.last == 0 && bytes.filter { $0 == 0 }.count == 1)
            bytes.removeLast()
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.contains(#""payload":"# + payload) && text.contains(#""also":[1E2]"#), "\(text)")
            let decoded = try VarlinkCallMessage.decode(bytes)
            #expect(decoded.method == "io.ferry.Store.Put" && decoded.more == more)
            #expect(Set(decoded.parameters.keys) == Set(parameters.keys).union(["payload", "also"]), "\(text)")
            for (key, value) in parameters { #expect(decoded.parameters[key] == value) }
        }
    }

    @Test func repliesRoundTrip() throws {
        for reply in [
            VarlinkReplyMessage(parameters: ["n": 1], continues: true),
            VarlinkReplyMessage(parameters: [:]),
            VarlinkReplyMessage(.invalidParameter("path")),
        ] {
            var bytes = reply.encoded()
            bytes.removeLast()
            #expect(try VarlinkReplyMessage.decode(bytes) == reply)
        }
        let error = try VarlinkReplyMessage.decode(
            Array(#"{"error":"org.varlink.service.InvalidParameter","parameters":{"parameter":"x"}}"#.utf8))
        #expect(error.varlinkError == .invalidParameter("x"))
        #expect(try VarlinkReplyMessage.decode(Array(#"{"error":"a.b.E"}"#.utf8)).varlinkError == VarlinkError("a.b.E"))
    }

    /// An error may echo what a call sent (a name of megabytes): each string in its reply is cut
    /// at `maxErrorString` bytes on a character boundary and marked, at any depth; shorter
    /// strings and other values are as they were.
    @Test func errorRepliesCutLongStrings() throws {
        let limit = VarlinkReplyMessage.maxErrorString
        for filler in ["a", "é", "👩‍👩‍👧"] {
            let long = String(repeating: filler, count: 3_000_000 / filler.utf8.count)
            let error = VarlinkError("a.b.NotFound", parameters: [
                "name": .string(long), "short": .string("kept"), "n": 7,
                "nested": .object(["list": .array([.string(long)])]),
            ])
            let reply = VarlinkReplyMessage(error)
            #expect(reply.encoded().count < 3 * limit)
            guard case .string(let name)? = reply.parameters["name"],
                  case .object(let nested)? = reply.parameters["nested"], case .array(let list)? = nested["list"],
                  case .string(let inner)? = list.first else {
                Issue.record("\(reply.parameters)"); continue
            }
            for cut in [name, inner] {
                #expect(cut.utf8.count <= limit && cut.utf8.count > limit - 3 - filler.utf8.count - 3 && cut.hasSuffix("…"))
                #expect(long.hasPrefix(String(cut.dropLast())))
            }
            #expect(reply.parameters["short"] == "kept" && reply.parameters["n"] == 7)
        }
        let exact = String(repeating: "x", count: limit)
        #expect(VarlinkReplyMessage(VarlinkError("a.b.E", parameters: ["s": .string(exact)])).parameters["s"] == .string(exact))
    }
}
