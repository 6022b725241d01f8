import FerryModel
import FerrySQLite

extension Store {
    /// Attachments whose blobs transport `transport` of `space` may drop: nothing in the space
    /// has referenced them since before `unreferencedBefore` (unix seconds), oldest first, at
    /// most `limit`. Empty for a transport the space does not have.
    public func blobDeletions(space: String = Store.privateSpace, transport: String, unreferencedBefore: Int64,
                              limit: Int = 200) throws(FerryError) -> [String] {
        let sid = try catalog.sid(space)
        return try read("listing blobs to remove") { db in
            let statement = try db.cached("""
                SELECT sha256 FROM blob_deletions WHERE sid = ? AND transport = ? AND since < ? ORDER BY since, sha256 LIMIT ?
                """)
            defer { statement.reset() }
            statement.bind(1, sid); statement.bind(2, transport); statement.bind(3, unreferencedBefore)
            statement.bind(4, Int64(max(1, limit)))
            var shas: [String] = []
            while try statement.step() { if let sha = statement.text(0) { shas.append(sha) } }
            return shas
        }
    }

    /// Forgets blobs `shas` removed from (or kept for good by) transport `transport` of `space`.
    /// Only rows still older than `unreferencedBefore` go: a blob referenced again and dropped
    /// again meanwhile has a newer row, which stays.
    public func blobsDeleted(space: String = Store.privateSpace, transport: String, shas: [String],
                             unreferencedBefore: Int64) throws(FerryError) {
        guard !shas.isEmpty else { return }
        let sid = try catalog.sid(space)
        try write("forgetting removed blobs") { writer in
            let statement = try writer.db.cached("""
                DELETE FROM blob_deletions WHERE sid = ? AND sha256 = ? AND transport = ? AND since < ?
                """)
            for sha in shas {
                statement.bind(1, sid); statement.bind(2, sha); statement.bind(3, transport); statement.bind(4, unreferencedBefore)
                try statement.run()
            }
        }
    }

    /// How many blobs wait to be removed from transport `transport` of `space`.
    public func blobDeletionCount(space: String = Store.privateSpace, transport: String) throws(FerryError) -> Int {
        let sid = try catalog.sid(space)
        return try read("counting blobs to remove") { db in
            let statement = try db.cached("SELECT count(*) FROM blob_deletions WHERE sid = ? AND transport = ?")
            defer { statement.reset() }
            statement.bind(1, sid); statement.bind(2, transport)
            return try statement.step() ? Int(statement.int64(0)) : 0
        }
    }
}
