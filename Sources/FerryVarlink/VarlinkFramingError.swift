/// Why a stream of bytes could not be split into Varlink messages.
public enum VarlinkFramingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A message (the bytes before its NUL terminator) is longer than `limit`, or at
    /// least `bufferedBytes` arrived without a terminator. The stream cannot be resynced:
    /// the connection must be closed.
    case messageTooLarge(limit: Int, bufferedBytes: Int)

    public var description: String {
        switch self {
        case let .messageTooLarge(limit, buffered):
            return "Varlink message exceeds \(limit) bytes (\(buffered) bytes buffered without a NUL terminator)"
        }
    }
}
