import FerryJSON
import Testing

@Suite struct JSONValueTests {
    @Test func literalsBuildTheMatchingCases() {
        let value: JSONValue = ["n": nil, "b": true, "i": 42, "d": 2.5, "s": "x", "a": [1, "two"], "o": ["k": false]]
        #expect(value == .object([
            "n": .null, "b": .bool(true), "i": .int(42), "d": .double(2.5), "s": .string("x"),
            "a": .array([.int(1), .string("two")]), "o": .object(["k": .bool(false)]),
        ]))
        let repeated: JSONValue = ["k": 1, "k": 2]
        #expect(repeated == .object(["k": .int(2)]))
    }

    @Test func subscriptFindsObjectMembersOnly() {
        let value: JSONValue = ["a": ["b": 1]]
        #expect(value["a"]?["b"] == .int(1))
        #expect(value["missing"] == nil)
        #expect(JSONValue.array([1])["a"] == nil)
        #expect(JSONValue.string("a")["a"] == nil)
    }

    @Test func typedAccessors() {
        #expect(JSONValue.string("s").stringValue == "s")
        #expect(JSONValue.int(1).stringValue == nil)
        #expect(JSONValue.int(-7).intValue == -7)
        #expect(JSONValue.double(3.0).intValue == 3)
        #expect(JSONValue.double(3.5).intValue == nil)
        #expect(JSONValue.double(1e300).intValue == nil)
        #expect(JSONValue.double(.nan).intValue == nil)
        #expect(JSONValue.double(-9223372036854775808.0).intValue == .min)
        #expect(JSONValue.double(9223372036854775808.0).intValue == nil)
        #expect(JSONValue.string("3").intValue == nil)
        #expect(JSONValue.int(2).doubleValue == 2.0)
        #expect(JSONValue.double(0.5).doubleValue == 0.5)
        #expect(JSONValue.bool(true).doubleValue == nil)
        #expect(JSONValue.bool(false).boolValue == false)
        #expect(JSONValue.null.boolValue == nil)
        #expect(JSONValue.array([.null]).arrayValue == [.null])
        #expect(JSONValue.object([:]).arrayValue == nil)
        #expect(JSONValue.object(["a": .null]).objectValue == ["a": .null])
        #expect(JSONValue.array([]).objectValue == nil)
        #expect(JSONValue.null.isNull)
        #expect(!JSONValue.int(0).isNull)
    }

    @Test func typeNames() {
        let values: [JSONValue] = [.null, .bool(true), .int(1), .double(1), .string(""), .array([]), .object([:])]
        #expect(values.map(\.typeName) == ["null", "bool", "int", "double", "string", "array", "object"])
    }

    @Test func intAndDoubleAreDistinctValues() {
        #expect(JSONValue.int(1) != JSONValue.double(1))
        #expect(Set<JSONValue>([.int(1), .double(1), .int(1)]).count == 2)
    }

    @Test func limitsDefaults() {
        #expect(JSONLimits.default.maxBytes == 16 * 1024 * 1024)
        #expect(JSONLimits.default.maxDepth == 256)
        let custom = JSONLimits(maxDepth: 3)
        #expect(custom.maxBytes == 16 * 1024 * 1024 && custom.maxDepth == 3)
    }
}
