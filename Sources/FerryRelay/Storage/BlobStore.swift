import FerrySync

/// Where blob bytes live: files beside a SQLite database (`BlobFiles`), or the PostgreSQL
/// database itself (`PostgresBlobStore`), so relays sharing a database need no shared disk.
///
/// Uploads always arrive in a local temporary file first (the server glue writes it); `commit`
/// moves them to their place. The blob's record and quota accounting are `RelayStorage`'s.
public protocol BlobStore: Sendable {
    /// A new, empty temporary file (mode 0600) and its descriptor, for an upload in progress.
    func createTemporary() throws -> (path: String, fd: Int32)
    /// Moves a finished upload into place (replacing an older copy) and removes the temporary file.
    func commit(temporary: String, owner: OwnerID, key: String) throws
    /// Removes blobs (missing ones are fine).
    func remove(_ owner: OwnerID, keys: [String])
    /// Removes the bytes of a blob whose record `RelayStorage.deleteBlob` just dropped; nothing
    /// where that dropped them too (PostgreSQL, where another relay may be storing the blob
    /// again by now).
    func dropped(_ owner: OwnerID, key: String)
    /// The response body that sends blob `key` of `size` bytes.
    func body(_ owner: OwnerID, key: String, size: Int64) -> HTTPResponse.Body
}

extension BlobFiles: BlobStore {
    public func dropped(_ owner: OwnerID, key: String) { remove(owner, keys: [key]) }

    public func body(_ owner: OwnerID, key: String, size: Int64) -> HTTPResponse.Body {
        .file(path: path(owner, key), size: Int(size))
    }
}
