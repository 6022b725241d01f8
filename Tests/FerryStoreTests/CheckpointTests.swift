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

    /// A few commits, far fewer pages than a nudge takes, then nothing: the checkpointer copies
    /// them into the database file `settleAfter` later all the same, so a copy of the file alone
    /// (a backup that leaves the log out) holds them; a commit after that pass is copied in turn.
    @Test func aFewCommitsReachTheDatabaseFileSoonAfter() async throws {
        let dir = TempDir()
        let path = dir.path + "/few.db"
        let db = try Database(path: path)
        try db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; CREATE TABLE t (x TEXT)")
        let checkpointer = try Checkpointer(path: path, settleAfter: .milliseconds(300)) { try $0.execute("PRAGMA busy_timeout = 5000") }
        let watch = try LogWatch(db: db, checkpointer: checkpointer)
        func rowsInTheFileAlone() throws -> Int64 {
            let copy = dir.path + "/copy-\(UUID().uuidString).db"
            try FileManager.default.copyItem(atPath: path, toPath: copy)
            return (try? Database(path: copy).scalarInt("SELECT count(*) FROM t")) ?? -1
        }
        for i in 0..<3 {
            try db.execute("INSERT INTO t VALUES ('\(i)')")
            watch.afterCommit()
        }
        #expect(try rowsInTheFileAlone() != 3)
        #expect(try await eventually(.seconds(10)) { try rowsInTheFileAlone() == 3 })
        try db.execute("INSERT INTO t VALUES ('later')")
        watch.afterCommit()
        #expect(try await eventually(.seconds(10)) { try rowsInTheFileAlone() == 4 })
        checkpointer.stop()
        _ = watch
    }

    /// A write connection with a `LogWatch` of a 1 MiB limit (256 pages) and a tail of 16 pages;
    /// each `commit` logs about 7 pages.
    private struct Writer {
        let db: Database
        let checkpointer: Checkpointer
        let watch: LogWatch
        let insert: Statement

        init(_ dir: TempDir) throws {
            let path = dir.path + "/log.db"
            db = try Database(path: path)
            try db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; CREATE TABLE t (body BLOB NOT NULL)")
            checkpointer = try Checkpointer(path: path) { try $0.execute("PRAGMA busy_timeout = 5000") }
            watch = try LogWatch(db: db, checkpointer: checkpointer, maxBytes: 1 << 20, restartTailPages: 16)
            insert = try db.prepare("INSERT INTO t (body) VALUES (?)")
        }

        func commit() throws {
            try db.transaction {
                for _ in 0..<6 {
                    insert.bind(1, blob: [UInt8](repeating: 7, count: 3000))
                    try insert.run()
                }
            }
            watch.afterCommit()
        }

        /// Commits until the log is started over; the most pages it held.
        func commitUntilRestart() throws -> Int {
            var largest = watch.pages
            for _ in 0..<10_000 {
                let before = watch.pages
                try commit()
                if watch.pages < before { return largest }
                largest = max(largest, watch.pages)
            }
            Issue.record("the log was never started over (\(watch.pages) pages)")
            return largest
        }
    }

    /// Past its limit the log is started over by the writer only once the checkpointer has
    /// copied all but a small tail of it: the restart then copies (and syncs) little on the
    /// writer's thread, where it held every write up.
    @Test func theWriterStartsTheLogOverOnceTheCheckpointerHasCaughtUp() async throws {
        let dir = TempDir()
        let writer = try Writer(dir)
        defer { writer.checkpointer.stop() }
        for _ in 0..<3 {
            // Past the limit with the checkpointer behind: the log goes on.
            while writer.watch.pages <= 256 { try writer.commit() }
            // Once it has copied the log up to the last commit, the next commit starts it over.
            let pages = writer.watch.pages
            writer.checkpointer.nudge()
            #expect(try await eventually(.seconds(30)) { writer.checkpointer.lastPass == Checkpointer.Pass(logged: pages, copied: pages) },
                    "the checkpointer's last pass: \(writer.checkpointer.lastPass), the log: \(pages) pages")
            try writer.commit()
            #expect(writer.watch.pages < pages, "the log was not started over: \(writer.watch.pages) pages")
        }
        #expect(try writer.db.scalarInt("SELECT count(*) FROM t") ?? 0 > 0)
    }

    /// Started over, the log file keeps its size, so the next commits overwrite pages the kernel
    /// holds instead of growing into freed ones again; only a log that one large transaction
    /// took past twice the limit is trimmed, back to that.
    @Test func theLogFileKeepsItsSizeWhenStartedOverAndIsTrimmedPastTwiceTheLimit() throws {
        let dir = TempDir()
        let writer = try Writer(dir)
        writer.checkpointer.stop()
        let log = dir.path + "/log.db-wal"
        func size() -> Int { FileSize.of(log) }
        #expect(writer.watch.trimBytes == 2 << 20)
        let largest = try writer.commitUntilRestart()
        // 384 pages and more were logged (with their frame headers): past the 1 MiB limit.
        #expect(size() > largest * 4096, "the log file is \(size()) bytes after holding \(largest) pages")
        for _ in 0..<3 {
            let held = size()
            _ = try writer.commitUntilRestart()
            #expect(size() == held, "the log file went from \(held) to \(size()) bytes")
        }
        // One transaction of about 3 MiB takes the file past 2 MiB; the restart after it trims it.
        try writer.db.transaction {
            for _ in 0..<1000 {
                writer.insert.bind(1, blob: [UInt8](repeating: 9, count: 3000))
                try writer.insert.run()
            }
        }
        #expect(size() > 3 << 20)
        writer.watch.afterCommit()
        try writer.commit()
        #expect(size() <= 2 << 20, "the log file is \(size()) bytes after a restart past twice the limit")
    }

    /// Stopped truncating (a store's `close`), the checkpointer copies the whole log and
    /// empties the file; a later stop returns at once.
    @Test func aTruncatingStopEmptiesTheLogAndAnotherStopReturns() throws {
        let dir = TempDir()
        let writer = try Writer(dir)
        for _ in 0..<20 { try writer.commit() }
        let log = dir.path + "/log.db-wal"
        #expect(FileSize.of(log) > 0)
        #expect(writer.checkpointer.stop(truncating: true))
        #expect(FileSize.of(log) == 0)
        #expect(writer.checkpointer.stop())
        let copy = dir.path + "/copy.db"
        try FileManager.default.copyItem(atPath: dir.path + "/log.db", toPath: copy)
        #expect(try Database(path: copy).scalarInt("SELECT count(*) FROM t") == 120)
    }

    /// With a checkpointer that does not keep up (here: stopped), the writer starts the log over
    /// itself once it is half as big again as the limit: the log stays bounded.
    @Test func theLogStaysBoundedWhenTheCheckpointerFallsBehind() throws {
        let dir = TempDir()
        let writer = try Writer(dir)
        writer.checkpointer.stop()
        var rows = 0
        for _ in 0..<3 {
            let largest = try writer.commitUntilRestart()
            // Started over after the first commit past 384 pages (a commit logs fewer than 16).
            #expect(largest > 384 && largest < 384 + 16, "the log held \(largest) pages before it was started over")
            rows = try Int(writer.db.scalarInt("SELECT count(*) FROM t") ?? 0)
        }
        #expect(rows > 3 * 256 / 7 * 6)
    }
}
