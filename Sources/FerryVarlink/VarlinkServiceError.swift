/// Why an interface could not be registered with a `VarlinkService`.
public enum VarlinkServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The interface definition does not parse.
    case invalidDefinition(VarlinkIDLError)
    /// An interface of that name is already registered (`org.varlink.service` always is).
    case duplicateInterface(String)
    /// A handler was given for a method the definition does not declare.
    case unknownMethod(interface: String, method: String)
    /// The methods registered so far capture objects at more than 64 distinct paths.
    case tooManyCapturePaths(interface: String)

    public var description: String {
        switch self {
        case let .invalidDefinition(error): return "invalid interface definition: \(error)"
        case let .duplicateInterface(name): return "interface \(name) is already registered"
        case let .unknownMethod(interface, method): return "\(interface) declares no method \(method)"
        case let .tooManyCapturePaths(interface): return "registering \(interface) would make more than 64 capture paths"
        }
    }
}
