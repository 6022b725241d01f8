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

    private func putBlobNow(key: BlobKey, from source: String, replacing: Bool = false) throws(TransportFailure) {
        try writer.withLock { (_: inout Writer) throws(TransportFailure) in
            try makeOwnDirectory()
            let dir = ownDirectory + "/blobs"
            do throws(FolderIOError) {
                try FolderIO.makeDirectory(dir)
                if !replacing, let existing = try FolderIO.kind(of: dir + "/" + key), existing.isRegular { return }
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

    /// Copies copy number `copy` of the blob `key` to `destination` (through a temporary file
    /// beside it, renamed over it): this device's copy first, then the other devices' in the
    /// order of their names; false when there is no such copy.
    public func getBlob(key: BlobKey, to destination: String, copy: Int) async throws(TransportFailure) -> Bool {
        try validate(key)
        return try await Blocking.run { () throws(TransportFailure) in try self.getBlobNow(key: key, to: destination, copy: copy) }
    }

    /// The blobs of which some device's copy changed at or after `since` (all when nil): cut
    /// short, replaced or altered by the sync tool, or written since then. One stat per blob
    /// file of the owner's devices.
    public func blobsChanged(since: Int64?) async throws(TransportFailure) -> Set<BlobKey> {
        try await Blocking.run { () throws(TransportFailure) in
            do throws(FolderIOError) {
                guard try FolderIO.kind(of: self.ownerDirectory)?.isDirectory == true else { return [] }
                var changed = Set<BlobKey>()
                for device in try FolderIO.list(self.ownerDirectory, limit: Self.maxDirectoryEntries) where FolderFileName.device(device) != nil {
                    let dir = self.ownerDirectory + "/" + device + "/blobs"
                    guard try FolderIO.kind(of: dir)?.isDirectory == true else { continue }
                    for name in try FolderIO.list(dir, limit: Self.maxDirectoryEntries)
                    where FolderFileName.isValidBlobKey(name) && !changed.contains(name) {
                        guard let at = try FolderIO.changed(dir + "/" + name) else { continue }
                        if since.map({ at >= $0 }) ?? true { changed.insert(name) }
                    }
                }
                return changed
            } catch {
                throw self.unavailable(error)
            }
        }
    }

    /// Writes this device's copy of `key` again from `source` (temporary name, fsync, rename over
    /// the damaged one).
    public func replaceBlob(key: BlobKey, from source: String) async throws(TransportFailure) {
        try validate(key)
        try await Blocking.run { () throws(TransportFailure) in try self.putBlobNow(key: key, from: source, replacing: true) }
    }

    /// Removes this device's copy of `key`: the other devices' copies are theirs (each removes
    /// its own when nothing it holds references the blob). Never `.inUse`: a device that
    /// references the blob again and finds no copy writes its own (its check of blobs that
    /// vanished, `blobsCanVanish`).
    public func deleteBlob(key: BlobKey) async throws(TransportFailure) -> BlobDeletion {
        try validate(key)
        return try await Blocking.run { () throws(TransportFailure) in
            try self.writer.withLock { (_: inout Writer) throws(TransportFailure) in
                try self.checkFolder()
                do throws(FolderIOError) {
                    let own = self.ownDirectory + "/blobs/" + key
                    if try FolderIO.kind(of: own)?.isRegular == true { try FolderIO.remove(own) }
                } catch {
                    throw self.unavailable(error)
                }
            }
            return .deleted
        }
    }

    private func getBlobNow(key: BlobKey, to destination: String, copy: Int) throws(TransportFailure) -> Bool {
        guard copy >= 0, let found = try findBlob(key, copy: copy) else { return false }
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

    /// The path of copy number `copy` of `key`: this device's `blobs/` first, then the other
    /// devices' in the order of their names; nil when there are fewer copies.
    private func findBlob(_ key: BlobKey, copy: Int = 0) throws(TransportFailure) -> String? {
        try checkFolder()
        var skip = copy
        do throws(FolderIOError) {
            let own = ownDirectory + "/blobs/" + key
            // Only a regular file is a blob: anything else under its name is not there.
            if let k = try FolderIO.kind(of: own), k.isRegular {
                if skip == 0 { return own }
                skip -= 1
            }
            guard try FolderIO.kind(of: ownerDirectory) != nil else { return nil }
            for name in try FolderIO.list(ownerDirectory, limit: Self.maxDirectoryEntries).sorted()
            where FolderFileName.device(name) != nil && name != device.description {
                let candidate = ownerDirectory + "/" + name + "/blobs/" + key
                if let k = try FolderIO.kind(of: candidate), k.isRegular {
                    if skip == 0 { return candidate }
                    skip -= 1
                }
            }
            return nil
        } catch {
            throw unavailable(error)
        }
    }
}
