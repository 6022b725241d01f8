import FerrySync
import Foundation

extension RelayService {
    /// `PUT /v1/owners/{owner}/blobs/{key}`: 201 when stored, 200 when it was already there.
    func putBlob(_ owner: OwnerID, key: String, body: RequestBody) throws(RelayError) -> HTTPResponse {
        guard case .file(let temporary, let size) = body else {
            throw .badRequest(code: "bad_request", message: "a blob upload needs a body")
        }
        do {
            // The size stored, not the size sent: a key names its content, so the copy kept is
            // the answer.
            if let stored = try storage.blobSize(owner, key: key) {
                unlink(temporary)
                return .json(200, ["key": .string(key), "size": .int(stored), "created": false])
            }
        } catch {
            throw storageFailure(error)
        }
        // The bytes go in place before their record: a crash between the two leaves a file
        // without a record, which the next upload of the key replaces.
        do { try blobs.commit(temporary: temporary, owner: owner, key: key) } catch {
            unlink(temporary)
            logger.error("storing a blob's bytes failed: \(error)", ["owner": owner.description])
            throw .storage("blob bytes: \(error)")
        }
        do {
            let created = try storage.addBlob(owner, key: key, size: Int64(size), quotaBytes: configuration.defaultQuotaBytes, now: now())
            return .json(created ? 201 : 200, ["key": .string(key), "size": .int(Int64(size)), "created": .bool(created)])
        } catch {
            if case .quotaExceeded = error { blobs.remove(owner, keys: [key]) }
            throw storageFailure(error)
        }
    }

    /// `GET` and `HEAD /v1/owners/{owner}/blobs/{key}`: the bytes (the glue leaves them out for HEAD).
    func getBlob(_ owner: OwnerID, key: String) throws(RelayError) -> HTTPResponse {
        let size: Int64?
        do { size = try storage.blobSize(owner, key: key) } catch { throw storageFailure(error) }
        guard let size else { throw .missing(what: "blob \(key)") }
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/octet-stream")],
                            body: blobs.body(owner, key: key, size: size))
    }
}
