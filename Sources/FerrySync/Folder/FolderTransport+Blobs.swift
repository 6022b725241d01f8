import FerryStore
import Glibc

extension FolderTransport {
    /// Copies the sealed blob at `source` into this device's `blobs/<key>` (temporary name, fsync,
    /// rename), unless it is there already. Throws `.rejected` for a key that is not 64 lowercase
    /// hex digits or an unreadable source file, `.unavailable` when the folder is missing or
    /// not writable.
    public func putBlob(key: BlobKey, from source: String) async throws(TransportFailure) {
        try validate(key)
        try await Blocking.run { () throws(TransportFailure) in try self.putBlobNow(key: key, from: source) }
    }

    private func putBlobNow(key: BlobKey, from source: String) throws(TransportFailure) {
        try writer.withLock { (_: inout Writer) throws(TransportFailure) in
            try makeOwnDirectory()
            let dir = ownDirectory + "/blobs"
            do throws(FolderIOError) {
                try FolderIO.makeDirectory(dir)
                if let existing = try FolderIO.kind(of: dir + "/" + key), existing.isRegular { return }
            } catch {
                throw unavailable(error)
            }
            guard (try? FolderIO.kind(of: source)) ?? nil != nil else {
                throw .rejected("the blob file \(source) to store under \(key) cannot be read: \(String(cString: strerror(ENOENT)))")
            }
            do throws(FolderIOError) {
                try FolderIO.copyAtomically(from: source, dir: dir, name: key, tempTag: tempTag())
            } catch {
                if error.path == source { throw .rejected("the blob file \(source) to store under \(key) cannot be read: \(error.reason)") }
                throw unavailable(error)
            }
        }
    }

    /// Whether any device's `blobs/` holds `key`. Throws `.rejected` for an invalid key,
    /// `.unavailable` when the folder is missing.
    public func hasBlob(key: BlobKey) async throws(TransportFailure) -> Bool {
        try validate(key)
        return try findBlob(key) != nil
    }

    /// Copies the blob `key` from the first device that holds it to `destination` (through a
    /// temporary file beside it, renamed over it); false when no device holds it yet.
    public func getBlob(key: BlobKey, to destination: String) async throws(TransportFailure) -> Bool {
        try validate(key)
        return try await Blocking.run { () throws(TransportFailure) in try self.getBlobNow(key: key, to: destination) }
    }

    private func getBlobNow(key: BlobKey, to destination: String) throws(TransportFailure) -> Bool {
        guard let found = try findBlob(key) else { return false }
        let slash = destination.lastIndex(of: "/")
        let dir = slash.map { String(destination[..<$0]) } ?? "."
        let file = slash.map { String(destination[destination.index(after: $0)...]) } ?? destination
        do throws(FolderIOError) {
            try FolderIO.copyAtomically(from: found, dir: dir.isEmpty ? "/" : dir, name: file, tempTag: tempTag())
            return true
        } catch {
            if error.path == found && error.code == ENOENT { return false }  // removed meanwhile
            if error.path == found { throw unavailable(error) }
            throw .rejected("cannot write the blob \(key) to \(destination): \(error.reason)")
        }
    }

    private func validate(_ key: BlobKey) throws(TransportFailure) {
        guard FolderFileName.isValidBlobKey(key) else {
            throw .rejected("the blob key \"\(key.prefix(80))\" is not 64 lowercase hex digits")
        }
    }

    /// The path of `key` in this device's `blobs/` or else another's, or nil.
    private func findBlob(_ key: BlobKey) throws(TransportFailure) -> String? {
        try checkFolder()
        do throws(FolderIOError) {
            let own = ownDirectory + "/blobs/" + key
            // Only a regular file is a blob: anything else under its name is not there.
            if let k = try FolderIO.kind(of: own), k.isRegular { return own }
            guard try FolderIO.kind(of: ownerDirectory) != nil else { return nil }
            for name in try FolderIO.list(ownerDirectory, limit: Self.maxDirectoryEntries).sorted() where FolderFileName.device(name) != nil {
                let candidate = ownerDirectory + "/" + name + "/blobs/" + key
                if let k = try FolderIO.kind(of: candidate), k.isRegular { return candidate }
            }
            return nil
        } catch {
            throw unavailable(error)
        }
    }
}
