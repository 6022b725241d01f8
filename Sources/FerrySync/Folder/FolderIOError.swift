import Glibc

/// A failed system call on the synced folder: which call, on which path, and the errno.
struct FolderIOError: Error, Sendable, Equatable, CustomStringConvertible {
    var call: String
    var path: String
    var code: Int32

    /// The system's text for the errno ("No such file or directory").
    var reason: String { String(cString: strerror(code)) }

    var description: String { "\(call)(\(path)): \(reason)" }
}
