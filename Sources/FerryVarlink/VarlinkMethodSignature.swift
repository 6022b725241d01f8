/// A method's input and output structs.
public struct VarlinkMethodSignature: Sendable, Hashable {
    public var name: String
    public var input: [VarlinkField]
    public var output: [VarlinkField]

    public init(name: String, input: [VarlinkField], output: [VarlinkField]) {
        self.name = name
        self.input = input
        self.output = output
    }
}
