import FerryClient
import FerryJSON
import Testing

/// `field=value` terms of `ls --where`: JSON scalars stay typed, anything else is a string.
@Suite struct PayloadFilterTests {
    @Test(arguments: [
        ("done=false", "done", JSONValue.bool(false)),
        ("done=true", "done", .bool(true)),
        ("n=3", "n", .int(3)),
        ("n=-2.5", "n", .double(-2.5)),
        ("gone=null", "gone", .null),
        (#"n="3""#, "n", .string("3")),
        ("title=milk", "title", .string("milk")),
        ("title=", "title", .string("")),
        ("expr=a=b", "expr", .string("a=b")),
        ("list=[1,2]", "list", .string("[1,2]")),
        (#"obj={"a":1}"#, "obj", .string(#"{"a":1}"#)),
        ("title=True", "title", .string("True")),
        ("x=01", "x", .string("01")),
        ("unicode=čaj", "unicode", .string("čaj")),
    ])
    func term(_ text: String, field: String, value: JSONValue) throws {
        let parsed = try PayloadFilter.parse(text)
        #expect(parsed.field == field)
        #expect(parsed.value == value)
    }

    @Test(arguments: ["done", "=false", ""])
    func malformedTerm(_ text: String) {
        #expect(throws: PayloadFilterError.self) { try PayloadFilter.parse(text) }
    }

    @Test func manyTerms() throws {
        let filter = try PayloadFilter.parse(["done=false", "title=milk"])
        #expect(filter == ["done": false, "title": "milk"])
        #expect(try PayloadFilter.parse([String]()) == [:])
    }

    @Test func fieldGivenTwiceIsRejected() {
        #expect(throws: PayloadFilterError(term: "a=2", reason: "the field a is given twice")) {
            try PayloadFilter.parse(["a=1", "a=2"])
        }
    }

    @Test func errorSaysWhatToWrite() {
        let error = PayloadFilterError(term: "done", reason: "expected field=value")
        #expect(error.description.contains("done=false"))
    }
}
