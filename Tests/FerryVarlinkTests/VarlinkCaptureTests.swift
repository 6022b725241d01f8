import FerryJSON
import Testing

@testable import FerryVarlink

/// Methods that take objects as text (`VarlinkMethod.capturing`): the handler gets the bytes
/// the client sent where it asked for them, values everywhere else (also where another
/// method asked), and the same answers to bad input as without capturing.
@Suite struct VarlinkCaptureTests {
    static let definition = """
        interface org.ferry.capture

        type Item (name: string, body: object)

        method Take(doc: object, items: []Item) -> ()
        method Other(doc: object) -> ()
        """

    static func service() throws -> VarlinkService {
        var service = VarlinkService(vendor: "Ferry", product: "FerryVarlinkTests", version: "0.1", url: "https://ferry.invalid")
        try service.register(definition, methods: [
            "Take": .batched(capturing: [[.key("doc")], [.key("items"), .anyElement, .key("body")]]) { calls in
                calls.map { _ in .success(.values([:])) }
            },
            "Other": .batched { calls in calls.map { _ in .success(.values([:])) } },
        ])
        return service
    }

    /// The call `prepare` queues for the batch handler of `text`'s method, or nil.
    static func prepared(_ service: VarlinkService, _ text: String) -> VarlinkCall? {
        let (prepared, _) = service.prepare(Array(text.utf8), peer: nil, isOutputClosed: false, limits: .default)
        if case .batch(_, _, let call) = prepared { return call }
        return nil
    }

    @Test func theHandlerGetsTheTextItAskedFor() throws {
        let service = try Self.service()
        let doc = #"{ "z": 1, "a": [true, {"k": "\u0041"}] }"#
        let body0 = #"{"x":1}"#, body1 = #"{"y" : "two"}"#
        let text = #"{"method":"org.ferry.capture.Take","parameters":{"items":[{"name":"n0","body":\#(body0)},{"body":\#(body1),"name":"n1"}],"doc":\#(doc)}}"#
        let call = try #require(Self.prepared(service, text))
        let captured = try #require(call.captured)
        #expect(captured.text(of: call.parameters["doc"]).map { String(decoding: $0, as: UTF8.self) } == doc)
        let items = try #require(call.parameters["items"]?.arrayValue)
        #expect(captured.text(of: items[0]["body"]).map { String(decoding: $0, as: UTF8.self) } == body0)
        #expect(captured.text(of: items[1]["body"]).map { String(decoding: $0, as: UTF8.self) } == body1)
        #expect(items[1]["name"] == "n1" && captured.text(of: items[1]["name"]) == nil)
        let value = try captured.value(of: try #require(captured.text(of: call.parameters["doc"])))
        #expect(value == (try JSONParser.parse(doc)))
    }

    @Test func anotherMethodGetsValuesAtTheSamePaths() throws {
        let service = try Self.service()
        let call = try #require(Self.prepared(service, #"{"method":"org.ferry.capture.Other","parameters":{"doc":{"b":[1,{"c":null}]}}}"#))
        #expect(call.captured == nil)
        #expect(call.parameters["doc"] == (try JSONParser.parse(#"{"b":[1,{"c":null}]}"#)))
    }

    @Test func badInputGetsTheSameAnswers() throws {
        let capturing = try Self.service()
        var plain = VarlinkService(vendor: "Ferry", product: "FerryVarlinkTests", version: "0.1", url: "https://ferry.invalid")
        try plain.register(Self.definition, methods: [
            "Take": .batched { calls in calls.map { _ in .success(.values([:])) } },
            "Other": .batched { calls in calls.map { _ in .success(.values([:])) } },
        ])
        let inputs = [
            #"{"method":"org.ferry.capture.Other","parameters":{"doc":{"a":1,"a":2}}}"#,
            #"{"method":"org.ferry.capture.Other","parameters":{"doc":{"a":1e400}}}"#,
            #"{"method":"org.ferry.capture.Take","parameters":{"doc":{"a":[1,}},"items":[]}}"#,
            #"{"method":"org.ferry.capture.Take","parameters":{"doc":[1],"items":[]}}"#,
            #"{"method":"org.ferry.capture.Take","parameters":{"doc":{},"items":[{"name":"n","body":"text"}]}}"#,
            #"{"method":"org.ferry.capture.Take","parameters":{"doc":{},"items":[{"name":"n"}]}}"#,
            #"{"method":"org.ferry.capture.Take","parameters":{"doc":{"x":"\ud800"},"items":[]}}"#,
            #"{"method":"org.ferry.capture.Take","parameters":{"items":[]}}"#,
        ]
        for text in inputs {
            let (a, _) = capturing.prepare(Array(text.utf8), peer: nil, isOutputClosed: false, limits: .default)
            let (b, _) = plain.prepare(Array(text.utf8), peer: nil, isOutputClosed: false, limits: .default)
            #expect(Self.summary(a) == Self.summary(b), "\(text)")
        }
    }

    /// What a capture leaves to its reader (duplicate keys, numbers out of range) reaches the
    /// handler that asked for the text, which finds it when it reads the text; the message is
    /// not refused for it, so the handler can answer with an error of its own.
    @Test func theHandlerChecksWhatACaptureLeaves() throws {
        let service = try Self.service()
        for doc in [#"{"a":1,"a":2}"#, #"{"a":[1e400]}"#, #"{"é":1,"é":2}"#] {
            let call = try #require(Self.prepared(service, #"{"method":"org.ferry.capture.Take","parameters":{"doc":\#(doc),"items":[]}}"#))
            let text = try #require(call.captured?.text(of: call.parameters["doc"]))
            #expect(String(decoding: text, as: UTF8.self) == doc)
            #expect(throws: JSONError.self, "\(doc)") { try call.captured!.value(of: text) }
        }
    }

    /// What `prepare` decided, comparable: the reply bytes, or that the call goes to the handler.
    static func summary(_ call: PreparedCall) -> String {
        switch call {
        case .done(let outcome): return "done \(outcome)"
        case .batch(let key, _, _): return "batch \(key)"
        case .task: return "task"
        }
    }
}
