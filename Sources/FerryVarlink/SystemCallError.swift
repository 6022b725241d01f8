import Glibc

/// A failed system call: which call (and on what), and the `errno` it returned.
///
/// Produced only by `Syscall`, so every socket, epoll or file failure in this module
/// names the call that failed.
public struct SystemCallError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The C function that failed, e.g. `"bind"`, with context such as a path when known.
    public let call: String
    /// The `errno` value the call left behind.
    public let errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// True for `EAGAIN`/`EWOULDBLOCK`: a non-blocking call that had nothing to do.
    public var isWouldBlock: Bool { errno == EAGAIN || errno == EWOULDBLOCK }

    public var description: String {
        "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
