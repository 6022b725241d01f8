import Glibc

/// A failed system call on the synced folder: which call, on which path, and the errno.
struct FolderIOError: Error, Sendable, Equatable, CustomStringConvertible {
    var call: String
    var path: String
    var code: Int32

    /// The `code` of a path that is there but is not a regular file (a directory, FIFO, device
    /// or socket under a file's name): no errno says that.
    static let notARegularFile: Int32 = -1

    /// The system's text for the errno ("No such file or directory").
    var reason: String {
        code == Self.notARegularFile ? "not a regular file" : String(cString: strerror(code))
    }

    var description: String { "\(call)(\(path)): \(reason)" }
}
