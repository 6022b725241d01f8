import FerryPostgres
import FerrySync
import Foundation

/// Blob bytes in the PostgreSQL database (`blob_chunks`), so relays sharing a database need no
/// shared file system. A blob is stored as pieces of `chunkBytes` keyed by their byte offset
/// (a BYTEA value holds at most 1 GB, and pieces keep memory bounded both ways); downloads read
/// one piece at a time as the client takes them. Uploads are spooled to `spool` first, as with
/// files. Limits and quota accounting are unchanged (`RelayStorage.addBlob` records the blob
/// after `commit` stored its bytes).
public struct PostgresBlobStore: BlobStore {
    public static let chunkBytes = 1 << 20

    let pool: PostgresPool
    let spool: String

    /// - Parameter spool: a local directory for uploads in progress; created, and emptied of what
    ///   a crash left.
    public init(storage: PostgresRelayStorage, spool: String) throws {
        pool = storage.pool
        self.spool = spool
        try FileManager.default.createDirectory(atPath: spool, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        for name in (try? FileManager.default.contentsOfDirectory(atPath: spool)) ?? [] {
            try? FileManager.default.removeItem(atPath: spool + "/" + name)
        }
    }

    public func createTemporary() throws -> (path: String, fd: Int32) {
        let path = "\(spool)/\(UUID().uuidString)"
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return (path, fd)
    }

    /// Copies the upload into the database in one transaction (upserting, so two relays storing
    /// the same key at once both succeed), then removes the temporary file.
    public func commit(temporary: String, owner: OwnerID, key: String) throws {
        defer { unlink(temporary) }
        guard let file = FileHandle(forReadingAtPath: temporary) else { throw POSIXError(.ENOENT) }
        defer { try? file.close() }
        let o = PostgresValue.bytes(owner.bytes)
        try pool.withConnection { db in
            try db.transaction {
                var start: Int64 = 0
                while let piece = try file.read(upToCount: PostgresBlobStore.chunkBytes), !piece.isEmpty {
                    try db.execute("""
                        INSERT INTO blob_chunks(owner, key, start, data) VALUES ($1, $2, $3, $4)
                        ON CONFLICT (owner, key, start) DO UPDATE SET data = EXCLUDED.data
                        """, [o, .text(key), .int(start), .bytes(Array(piece))])
                    start += Int64(piece.count)
                }
                // Pieces past the end belong to an older, longer copy.
                try db.execute("DELETE FROM blob_chunks WHERE owner = $1 AND key = $2 AND start >= $3", [o, .text(key), .int(start)])
            }
        }
    }

    /// The storage's `deleteBlob` dropped the pieces with the record, in one transaction.
    public func dropped(_ owner: OwnerID, key: String) {}

    public func remove(_ owner: OwnerID, keys: [String]) {
        guard !keys.isEmpty else { return }
        _ = try? pool.withConnection { db in
            for key in keys {
                try db.execute("DELETE FROM blob_chunks WHERE owner = $1 AND key = $2", [.bytes(owner.bytes), .text(key)])
            }
        }
    }

    public func body(_ owner: OwnerID, key: String, size: Int64) -> HTTPResponse.Body {
        .stream(size: Int(size), source: Reader(pool: pool, owner: owner, key: key))
    }

    /// Reads a blob piece by piece, keeping the current piece.
    ///
    /// `@unchecked Sendable`: `current` is guarded by `lock` (the glue calls from one thread at a
    /// time anyway).
    final class Reader: BodySource, @unchecked Sendable {
        let pool: PostgresPool
        let owner: OwnerID
        let key: String
        private let lock = NSLock()
        private var current: (start: Int64, data: [UInt8])?

        init(pool: PostgresPool, owner: OwnerID, key: String) {
            self.pool = pool; self.owner = owner; self.key = key
        }

        func read(offset: Int64, maxBytes: Int) throws -> [UInt8] {
            lock.lock(); defer { lock.unlock() }
            if current.map({ offset < $0.start || offset >= $0.start + Int64($0.data.count) }) ?? true {
                current = try pool.withConnection { db in
                    let r = try db.execute("""
                        SELECT start, data FROM blob_chunks WHERE owner = $1 AND key = $2 AND start <= $3 ORDER BY start DESC LIMIT 1
                        """, [.bytes(owner.bytes), .text(key), .int(offset)])
                    return r.count == 1 ? (r.int64(0, 0), r.bytes(0, 1) ?? []) : nil
                }
            }
            guard let current, offset >= current.start, offset < current.start + Int64(current.data.count) else {
                throw POSIXError(.ENOENT)
            }
            let from = Int(offset - current.start)
            return Array(current.data[from..<min(current.data.count, from + maxBytes)])
        }
    }
}
