import FerrySQLite
import FerryTestSupport
import Foundation
import Testing
@testable import FerryStore

/// The write-ahead log is copied back into the database in the background as writes come in,
/// told by SQLite's WAL hook rather than by looking at the file.
@Suite struct CheckpointTests {
    @Test func theWALHookReportsTheLogAfterEveryCommit() throws {
        let dir = TempDir()
        let db = try Database(path: dir.path + "/hook.db")
        try db.execute("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (x TEXT)")
        final class Seen: @unchecked Sendable { var pages: [Int] = [] }   // one thread only
        let seen = Seen()
        db.onWALCommit { seen.pages.append($0) }
        for i in 0..<5 { try db.execute("INSERT INTO t VALUES ('\(i)')") }
        #expect(seen.pages.count == 5)
        #expect(seen.pages == seen.pages.sorted() && seen.pages.allSatisfy { $0 > 0 })
        db.onWALCommit(nil)
        try db.execute("INSERT INTO t VALUES ('after')")
        #expect(seen.pages.count == 5)
    }

    /// Single writes, each its own commit: the checkpointer is nudged by the pages logged and
    /// copies them into the database file with no timer and no reader asking.
    @Test func loggedPagesReachTheDatabaseFileWhileWritesGoOn() async throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        let file = dir.path + "/ferry.db"
        func size(_ path: String) -> Int64 {
            ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
        }
        let before = size(file)
        let text = String(repeating: "x", count: 500)
        for i in 0..<2500 { _ = try store.put(entity: "note", id: "n\(i)", payload: #"{"t":"\#(text)"}"#) }
        #expect(try await eventually(.seconds(30)) { size(file) > before + (1 << 20) },
                "the database file stayed at \(size(file)) bytes (from \(before)); the log at \(size(file + "-wal"))")
    }
}
