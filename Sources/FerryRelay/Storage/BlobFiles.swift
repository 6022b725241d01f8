import FerrySync
import Foundation

/// Blob bytes as files: `<root>/<owner>/<key>`, written to `<root>/.tmp/` first and renamed into
/// place, so a reader sees a whole blob or none. Keys are checked by the router (64 lowercase
/// hex), so no path built here can leave `root`.
public struct BlobFiles: Sendable {
    public let root: String

    /// Creates the directories and clears temporary files a crash left.
    public init(root: String) throws {
        self.root = root
        try FileManager.default.createDirectory(atPath: root + "/.tmp", withIntermediateDirectories: true)
        for name in (try? FileManager.default.contentsOfDirectory(atPath: root + "/.tmp")) ?? [] {
            try? FileManager.default.removeItem(atPath: root + "/.tmp/" + name)
        }
    }

    /// Where blob `key` of `owner` lives.
    public func path(_ owner: OwnerID, _ key: String) -> String {
        precondition(Router.isBlobKey(key), "blob keys are checked before they reach the file system")
        return "\(root)/\(owner)/\(key)"
    }

    /// A new, empty temporary file (mode 0600) and its descriptor, for an upload in progress.
    public func createTemporary() throws -> (path: String, fd: Int32) {
        let path = "\(root)/.tmp/\(UUID().uuidString)"
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return (path, fd)
    }

    /// Moves a finished upload into place (replacing an older copy).
    public func commit(temporary: String, owner: OwnerID, key: String) throws {
        try FileManager.default.createDirectory(atPath: "\(root)/\(owner)", withIntermediateDirectories: true)
        guard rename(temporary, path(owner, key)) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    /// Removes blobs (missing files are fine).
    public func remove(_ owner: OwnerID, keys: [String]) {
        for key in keys where Router.isBlobKey(key) { unlink(path(owner, key)) }
    }
}
