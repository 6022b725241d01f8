/// Why a libsodium operation refused its input.
public enum CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The ciphertext does not authenticate under the key and associated data: a wrong key, or
    /// changed bytes.
    case authenticationFailed
    /// An input has the wrong size for the primitive (a key, a nonce, a stream header).
    case invalidLength(what: String, expected: Int, actual: Int)

    public var description: String {
        switch self {
        case .authenticationFailed: "the data does not authenticate: a wrong key or changed bytes"
        case .invalidLength(let what, let expected, let actual): "\(what) must be \(expected) bytes, not \(actual)"
        }
    }
}
