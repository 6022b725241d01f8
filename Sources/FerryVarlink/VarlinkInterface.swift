/// A parsed Varlink interface definition together with its original text.
///
/// `description` is the exact text given to `parse`, comments included: it is what
/// `org.varlink.service.GetInterfaceDescription` returns to clients.
public struct VarlinkInterface: Sendable {
    /// The reverse-domain interface name, e.g. `org.varlink.certification`.
    public let name: String
    /// The interface definition text, verbatim.
    public let description: String
    /// `type` definitions by name (each a `.struct` or an `.enum`).
    public let types: [String: VarlinkType]
    /// Methods by short name.
    public let methods: [String: VarlinkMethodSignature]
    /// Errors by short name, with their parameter fields.
    public let errors: [String: [VarlinkField]]
    /// Type, method and error names in definition order.
    public let memberNames: [String]

    init(
        name: String, description: String, types: [String: VarlinkType],
        methods: [String: VarlinkMethodSignature], errors: [String: [VarlinkField]], memberNames: [String]
    ) {
        self.name = name
        self.description = description
        self.types = types
        self.methods = methods
        self.errors = errors
        self.memberNames = memberNames
    }

    /// Parses an interface definition.
    ///
    /// Checks the grammar, the name rules, that member names are unique and that every
    /// named type is defined in the interface.
    /// - Throws: `VarlinkIDLError` with the line and column of the first problem.
    public static func parse(_ text: String) throws(VarlinkIDLError) -> VarlinkInterface {
        var parser = VarlinkIDLParser(text)
        return try parser.parse(description: text)
    }
}
