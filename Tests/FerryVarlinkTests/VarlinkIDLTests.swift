import Testing

@testable import FerryVarlink

@Suite struct VarlinkIDLTests {
    /// The certification interface from the reference implementations.
    static let certification = """
        # Interface to test varlink implementations against.
        interface org.varlink.certification

        type Interface (
          foo: ?[]?[string](foo, bar, baz),
          anon: (foo: bool, bar: bool)
        )

        type MyType (
          object: object,
          enum: (one, two, three),
          struct: (first: int, second: string),
          array: []string,
          dictionary: [string]string,
          stringset: [string](),
          nullable: ?string,
          nullable_array_struct: ?[](first: int, second: string),
          interface: Interface
        )

        method Start() -> (client_id: string)
        method Test06(
          client_id: string,
          bool: bool,
          int: int,
          float: float,
          string: string
        ) -> (
          struct: (
            bool: bool,
            int: int,
            float: float,
            string: string
          )
        )
        # returns more than one reply with "continues"
        method Test10(client_id: string, mytype: MyType) -> (string: string)
        method Test11(client_id: string, last_more_replies: []string) -> ()
        error ClientIdError ()
        error CertificationError (wants: object, got: object)
        """

    @Test func parsesEveryTypeForm() throws {
        let interface = try VarlinkInterface.parse(Self.certification)
        #expect(interface.name == "org.varlink.certification")
        #expect(interface.description == Self.certification)
        #expect(interface.memberNames == [
            "Interface", "MyType", "Start", "Test06", "Test10", "Test11", "ClientIdError", "CertificationError",
        ])
        let myType = try #require(interface.types["MyType"])
        guard case let .struct(fields) = myType else {
            Issue.record("MyType is not a struct")
            return
        }
        let types = Dictionary(uniqueKeysWithValues: fields.map { ($0.name, $0.type) })
        #expect(types["object"] == .object)
        #expect(types["enum"] == .enum(["one", "two", "three"]))
        #expect(types["struct"] == .struct([.init(name: "first", type: .int), .init(name: "second", type: .string)]))
        #expect(types["array"] == .array(.string))
        #expect(types["dictionary"] == .map(.string))
        #expect(types["stringset"] == .map(.struct([])))
        #expect(types["nullable"] == .optional(.string))
        #expect(types["nullable_array_struct"]?.description == "?[](first: int, second: string)")
        #expect(types["interface"] == .named("Interface"))
        #expect(interface.types["Interface"]?.description
            == "(foo: ?[]?[string](foo, bar, baz), anon: (foo: bool, bar: bool))")
        #expect(interface.methods["Start"] == VarlinkMethodSignature(name: "Start", input: [], output: [
            .init(name: "client_id", type: .string),
        ]))
        #expect(interface.methods["Test11"]?.output == [])
        #expect(interface.errors["CertificationError"] == [
            .init(name: "wants", type: .object), .init(name: "got", type: .object),
        ])
        #expect(interface.errors["ClientIdError"] == [])
    }

    @Test func parsesTheBuiltinServiceInterface() throws {
        let interface = VarlinkServiceInterface.interface
        #expect(interface.name == "org.varlink.service")
        #expect(Set(interface.methods.keys) == ["GetInfo", "GetInterfaceDescription"])
        #expect(Set(interface.errors.keys) == [
            "InterfaceNotFound", "MethodNotFound", "MethodNotImplemented", "InvalidParameter", "PermissionDenied",
            "ExpectedMore",
        ])
    }

    @Test func commentsMayAppearBetweenAnyTokens() throws {
        let text = """
            #a
            interface # b
              org.example.x # c
            method # d
            Ping # e
            ( # f
              ping # g
              : # h
              string # i
            ) # j
            -> # k
            (pong: string) # l
            """
        let interface = try VarlinkInterface.parse(text)
        #expect(interface.methods["Ping"]?.input == [.init(name: "ping", type: .string)])
    }

    private func failure(_ text: String) -> VarlinkIDLError? {
        do {
            _ = try VarlinkInterface.parse(text)
            return nil
        } catch {
            return error
        }
    }

    @Test func reportsErrorsWithPositions() {
        #expect(failure("") == VarlinkIDLError(kind: .unexpectedEnd, line: 1, column: 1))
        #expect(failure("interface org.example.x\n")?.kind == .noMembers)
        #expect(failure("interface example\nmethod A() -> ()")?.kind == .invalidInterfaceName("example"))
        #expect(failure("interface org.-x.y\nmethod A() -> ()")?.kind == .invalidInterfaceName("org.-x.y"))
        #expect(failure("interface org.x.y\nmethod a() -> ()")?.kind == .invalidMemberName("a"))
        #expect(failure("interface org.x.y\nmethod A(_a: int) -> ()")?.kind == .invalidFieldName("_a"))
        #expect(failure("interface org.x.y\nmethod A(a__b: int) -> ()")?.kind == .invalidFieldName("a__b"))
        #expect(failure("interface org.x.y\nmethod A(a: ??int) -> ()")?.kind == .doubleOptional)
        #expect(failure("interface org.x.y\nmethod A(a: int, a: int) -> ()")?.kind == .duplicateField("a"))
        #expect(failure("interface org.x.y\ntype A (a: int)\nerror A ()")?.kind == .duplicateMember("A"))
        #expect(failure("interface org.x.y\nmethod A(a: Missing) -> ()")
            == VarlinkIDLError(kind: .unknownType("Missing"), line: 2, column: 13))
        #expect(failure("interface org.x.y\nmethod A(a: int) ()")?.kind == .unexpected(expected: "\"->\""))
        #expect(failure("interface org.x.y\nmethod A(a: int, b) -> ()")?.kind == .unexpected(expected: "\":\""))
        #expect(failure("interface org.x.y\ntype E (a, b: int)")?.kind == .unexpected(expected: "\",\" or \")\""))
        #expect(failure("interface org.x.y\nmethod A(a: int) -> (b: int")?.kind == .unexpectedEnd)
        #expect(failure("interface org.x.y\nmethod A(a: [int]int) -> ()")?.kind
            == .unexpected(expected: "\"[]\" or \"[string]\""))
        #expect(failure("interface org.x.y\nmethod A(a: int) -> (b: (x, y))") == nil)
        #expect(failure("interface org.x.y\nmethod A(a: int) -> (x, y)")?.kind
            == .unexpected(expected: "a struct of \"name: type\" fields"))
        #expect(failure("interface org.x.y\nfunction A() -> ()")?.kind
            == .unexpected(expected: "\"type\", \"method\" or \"error\""))
    }

    @Test func deepNestingInADefinitionIsRefused() {
        let deep = "interface org.x.y\nmethod A(a: " + String(repeating: "[]", count: 10_000) + "int) -> ()"
        #expect(failure(deep) != nil)
        let parens = "interface org.x.y\nmethod A(a: " + String(repeating: "(a: ", count: 10_000) + "int"
            + String(repeating: ")", count: 10_000) + ") -> ()"
        #expect(failure(parens) != nil)
    }
}
