/// Why bytes cannot be an owner's root key.
public enum OwnerKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A root key is exactly `OwnerKeys.rootKeyBytes` bytes.
    case wrongLength(actual: Int)

    public var description: String {
        switch self {
        case .wrongLength(let actual):
            "an owner root key is \(OwnerKeys.rootKeyBytes) bytes, not \(actual); restore it from its recovery phrase"
        }
    }
}
