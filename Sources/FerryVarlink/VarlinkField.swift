/// One field of a struct, method signature or error: `name: type`.
public struct VarlinkField: Sendable, Hashable, CustomStringConvertible {
    public var name: String
    public var type: VarlinkType

    public init(name: String, type: VarlinkType) {
        self.name = name
        self.type = type
    }

    public var description: String { "\(name): \(type)" }
}
