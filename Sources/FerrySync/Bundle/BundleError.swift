/// Why a bundle could not be written or read. Each says what to do next.
public enum BundleError: Error, Sendable, CustomStringConvertible {
    /// A file operation failed.
    case io(path: String, operation: String, errno: Int32)
    /// The file is not a Ferry bundle, or a newer format.
    case notABundle(path: String, reason: String)
    /// The bundle is damaged (a bad frame, a missing end): nothing was imported.
    case damaged(path: String, reason: String)
    /// The store failed.
    case store(String)

    public var description: String {
        switch self {
        case .io(let path, let operation, let code) where code == EROFS:
            "cannot \(operation) \(path): \(String(cString: strerror(code))); \(ReadOnlyPath.advice(path))"
        case .io(let path, let operation, let code):
            "cannot \(operation) \(path): \(String(cString: strerror(code))); check the path and its permissions"
        case .notABundle(let path, let reason): "\(path) is not a Ferry bundle (\(reason)); pass a file written by 'ferryctl export'"
        case .damaged(let path, let reason): "\(path) is damaged (\(reason)); nothing was imported: export it again"
        case .store(let message): "the store failed: \(message)"
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
