import FerrySync
import Foundation

extension RelayService {
    /// `PUT /v1/owners/{owner}/blobs/{key}`: 201 when stored, 200 when it was already there.
    /// Either way the blob counts as used now (kept from `DELETE` for `BlobDeleteGraceSeconds`).
    func putBlob(_ owner: OwnerID, key: String, body: RequestBody) throws(RelayError) -> HTTPResponse {
        guard case .file(let temporary, let size) = body else {
            throw .badRequest(code: "bad_request", message: "a blob upload needs a body")
        }
        let t = now()
        return try blobLocks.withLock(key) { () throws(RelayError) -> HTTPResponse in
            do throws(RelayStorageError) {
                // The size stored, not the size sent: a key names its content, so the copy kept is
                // the answer.
                if let stored = try storage.blobSize(owner, key: key, touching: t) {
                    unlink(temporary)
                    return .json(200, ["key": .string(key), "size": .int(stored), "created": false])
                }
            } catch {
                throw storageFailure(error, owner: owner)
            }
            // The bytes go in place before their record: a crash between the two leaves a file
            // without a record, which the next upload of the key replaces.
            do { try blobs.commit(temporary: temporary, owner: owner, key: key) } catch {
                unlink(temporary)
                logger.error("storing a blob's bytes failed: \(error)", ["owner": owner.description])
                throw .storage("blob bytes: \(error)")
            }
            do throws(RelayStorageError) {
                let created = try storage.addBlob(owner, key: key, size: Int64(size), quotaBytes: configuration.defaultQuotaBytes, now: t)
                return .json(created ? 201 : 200, ["key": .string(key), "size": .int(Int64(size)), "created": .bool(created)])
            } catch {
                if case .quotaExceeded = error { blobs.remove(owner, keys: [key]) }
                throw storageFailure(error, owner: owner)
            }
        }
    }

    /// `GET` and `HEAD /v1/owners/{owner}/blobs/{key}`: the bytes (the glue leaves them out for
    /// HEAD). A HEAD counts as a use (`touching`): a device asks before it pushes a record
    /// referencing a blob it does not upload again.
    func getBlob(_ owner: OwnerID, key: String, touching: Bool = false) throws(RelayError) -> HTTPResponse {
        let size: Int64?
        do { size = try storage.blobSize(owner, key: key, touching: touching ? now() : nil) } catch { throw storageFailure(error, owner: owner) }
        guard let size else { throw .missing(what: "blob \(key)") }
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/octet-stream")],
                            body: blobs.body(owner, key: key, size: size))
    }

    /// `DELETE /v1/owners/{owner}/blobs/{key}`: 204 when removed or not there; 409 `blob_in_use`
    /// when a device stored it or looked for it within `BlobDeleteGraceSeconds`.
    func deleteBlob(_ owner: OwnerID, key: String) throws(RelayError) -> HTTPResponse {
        let grace = Int64(configuration.blobDeleteGraceSeconds) * 1000
        let t = now()
        let outcome = try blobLocks.withLock(key) { () throws(RelayError) -> RelayBlobDeletion in
            let outcome: RelayBlobDeletion
            do throws(RelayStorageError) {
                outcome = try storage.deleteBlob(owner, key: key, usedSince: t - grace)
            } catch {
                throw storageFailure(error, owner: owner)
            }
            if case .deleted = outcome { blobs.dropped(owner, key: key) }
            return outcome
        }
        switch outcome {
        case .deleted, .absent:
            return HTTPResponse(status: 204)
        case .inUse(let used):
            throw .blobInUse(retryAfterSeconds: Int(max(1, (used + grace - t + 999) / 1000)))
        }
    }
}

/// Locks by blob key, so that a blob's upload (look up, move the bytes in place, record) and
/// its removal (drop the record, then the bytes) in this process never interleave: a removal
/// between an upload's look-up and its record would leave a record without bytes.
final class BlobLocks: Sendable {
    private let locks: [NSLock] = (0..<64).map { _ in NSLock() }

    func withLock<T, E: Error>(_ key: String, _ body: () throws(E) -> T) throws(E) -> T {
        var hasher = Hasher()
        hasher.combine(key)
        let lock = locks[Int(UInt(bitPattern: hasher.finalize()) % UInt(locks.count))]
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}
