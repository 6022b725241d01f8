import FerryJSON
import Testing

@testable import FerryVarlink

@Suite struct VarlinkValidationTests {
    let interface = try! VarlinkInterface.parse(TestInterface.definition)

    private func invalid(_ method: String, _ parameters: [String: JSONValue]) -> String? {
        interface.invalidParameter(in: parameters, for: interface.methods[method]!.input)
    }

    static let goodShapes: [String: JSONValue] = [
        "items": [["name": "a", "count": 1], ["name": "b", "count": 2]],
        "tags": ["x": "y"],
        "set": ["one": [:], "two": [:]],
        "mode": "fast",
        "extra": ["flag": true],
        "ratio": 1,
    ]

    @Test func acceptsValidParameters() {
        #expect(invalid("Echo", ["text": "hi"]) == nil)
        #expect(invalid("Echo", ["text": "hi", "number": nil]) == nil)
        #expect(invalid("Echo", ["text": "hi", "number": 3]) == nil)
        #expect(invalid("Shapes", Self.goodShapes) == nil)
        var withoutOptional = Self.goodShapes
        withoutOptional["extra"] = nil
        withoutOptional["ratio"] = 0.5
        #expect(invalid("Shapes", withoutOptional) == nil)
    }

    @Test func namesTheInvalidParameter() {
        #expect(invalid("Echo", [:]) == "text")
        #expect(invalid("Echo", ["text": nil]) == "text")
        #expect(invalid("Echo", ["text": 5]) == "text")
        #expect(invalid("Echo", ["text": "a", "number": 1.5]) == "number")
        #expect(invalid("Echo", ["text": "a", "zzz": 1, "aaa": 2]) == "aaa")
        #expect(invalid("Add", ["a": 1, "b": "2"]) == "b")
        #expect(invalid("Add", ["a": true, "b": 2]) == "a")
    }

    @Test func checksNestedShapes() {
        let cases: [(String, JSONValue)] = [
            ("items", [["name": "a"]]),
            ("items", [["name": "a", "count": 1, "extra": 1]]),
            ("items", ["a"]),
            ("tags", ["x": 1]),
            ("tags", ["x", "y"]),
            ("set", ["one": ["x": 1]]),
            ("set", ["one": true]),
            ("mode", "medium"),
            ("mode", 1),
            ("extra", ["flag": "yes"]),
            ("extra", ["flag": true, "other": false]),
            ("ratio", "1.0"),
        ]
        for (name, value) in cases {
            var parameters = Self.goodShapes
            parameters[name] = value
            #expect(invalid("Shapes", parameters) == name, "\(name) = \(value)")
        }
    }

    @Test func objectAcceptsOnlyObjects() {
        #expect(invalid("Deep", ["value": ["any": ["thing": [1, 2]]]]) == nil)
        #expect(invalid("Deep", ["value": [1]]) == "value")
    }
}
