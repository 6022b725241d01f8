@testable import FerrySQLite
import FerryTestSupport
import Foundation
import Testing

/// `CoalescingVFS`: a writer whose log frames leave in one write per transaction, checked after
/// every commit by a reader on SQLite's own VFS, which must see exactly what was committed.
@Suite struct CoalescingVFSTests {
    /// A coalescing writer and a plain reader of one database.
    struct Pair {
        let writer: Database
        let reader: Database
        let path: String

        init(_ dir: TempDir, pageSize: Int = 4096, synchronous: String = "NORMAL", cachePages: Int = 2000) throws {
            path = dir.path + "/coalesce-\(pageSize)-\(synchronous).db"
            writer = try Database(path: path, coalesceLogWrites: true)
            try writer.execute("""
                PRAGMA page_size = \(pageSize); PRAGMA journal_mode = WAL; PRAGMA synchronous = \(synchronous);
                PRAGMA cache_size = \(cachePages); PRAGMA wal_autocheckpoint = 0;
                CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT NOT NULL, body BLOB NOT NULL);
                CREATE INDEX t_by_k ON t (k);
                """)
            reader = try Database(path: path)
        }

        /// The reader's view: rows and the total of their body lengths.
        func seen() throws -> (rows: Int64, bytes: Int64) {
            let s = try reader.prepare("SELECT count(*), coalesce(sum(length(body)), 0) FROM t")
            _ = try s.step()
            return (s.int64(0), s.int64(1))
        }

        func insert(_ rows: Int, bodySize: Int, from first: Int) throws {
            try writer.transaction {
                let s = try writer.prepare("INSERT INTO t (id, k, body) VALUES (?, ?, zeroblob(?))")
                for i in first..<(first + rows) {
                    s.bind(1, Int64(i))
                    s.bind(2, "k\((i &* 7919) % 100_003)")
                    s.bind(3, Int64(bodySize))
                    try s.run()
                    s.reset()
                }
            }
        }
    }

    @Test func aOneRowCommitIsOneWriteAndReadersSeeItAtOnce() throws {
        let dir = TempDir()
        let pair = try Pair(dir)
        try pair.insert(1, bodySize: 100, from: 0)   // starts the log (its header)
        for i in 1...50 {
            let before = try #require(pair.writer.coalescedLogWrites)
            try pair.insert(1, bodySize: 100, from: i)
            #expect(try #require(pair.writer.coalescedLogWrites) == before + 1, "commit \(i)")
            #expect(try pair.seen().rows == Int64(i + 1))
        }
        #expect(try pair.reader.scalarText("PRAGMA integrity_check") == "ok")
    }

    /// Transactions from one page to far past the buffer, with a tiny page cache so that SQLite
    /// writes frames before the commit (a spill) and rewrites some of them in place, a
    /// transaction rolled back after spilling, and updates all over the table.
    @Test(arguments: [(512, "NORMAL"), (4096, "NORMAL"), (4096, "FULL"), (65536, "NORMAL")])
    func transactionsOfEverySizeReachReadersWhole(pageSize: Int, synchronous: String) throws {
        let dir = TempDir()
        let pair = try Pair(dir, pageSize: pageSize, synchronous: synchronous, cachePages: 10)
        var rows: Int64 = 0, bytes: Int64 = 0
        var next = 0
        for (count, size) in [(1, 10), (10, 300), (100, 300), (1000, 300), (5000, 200), (1, 2 << 20), (3, 100_000)] {
            try pair.insert(count, bodySize: size, from: next)
            next += count
            rows += Int64(count)
            bytes += Int64(count * size)
            let seen = try pair.seen()
            #expect(seen.rows == rows && seen.bytes == bytes, "after \(count) rows of \(size) bytes")
        }
        // Rolled back after spilling: nothing of it is seen, and the next commit is.
        try pair.writer.execute("BEGIN")
        for i in 0..<3000 { try pair.writer.execute("INSERT INTO t (id, k, body) VALUES (\(next + i), 'r', zeroblob(300))") }
        try pair.writer.execute("ROLLBACK")
        #expect(try pair.seen().rows == rows)
        try pair.writer.execute("UPDATE t SET body = zeroblob(length(body) + 1), k = 'u' || k WHERE id % 7 = 3")
        let updated = try pair.writer.scalarInt("SELECT count(*) FROM t WHERE id % 7 = 3") ?? 0
        bytes += updated
        let seen = try pair.seen()
        #expect(seen.rows == rows && seen.bytes == bytes)
        #expect(try pair.reader.scalarText("PRAGMA integrity_check") == "ok")
    }

    /// A log another connection started (the writer learns the page size from the file), and
    /// logs restarted from the top after checkpoints.
    @Test(arguments: [512, 4096, 65536])
    func logsStartedElsewhereAndRestartedLogsAreWrittenRight(pageSize: Int) throws {
        let dir = TempDir()
        let path = dir.path + "/elsewhere.db"
        let plain = try Database(path: path)
        try plain.execute("""
            PRAGMA page_size = \(pageSize); PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
            CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL);
            INSERT INTO t (body) VALUES (zeroblob(100));
            """)
        let writer = try Database(path: path, coalesceLogWrites: true)
        try writer.execute("PRAGMA wal_autocheckpoint = 0")
        func count() throws -> Int64 { try plain.scalarInt("SELECT count(*) FROM t") ?? -1 }
        var expected: Int64 = 1
        for round in 0..<3 {
            for commit in 0..<5 {
                let before = writer.coalescedLogWrites ?? 0
                try writer.execute("INSERT INTO t (body) VALUES (zeroblob(100))")
                expected += 1
                #expect(try count() == expected, "round \(round)")
                // Coalesced, not written through: one write per one-page commit. A log started
                // over writes its header and syncs it first (SQLite's own rule): one more.
                let after = try #require(writer.coalescedLogWrites)
                let writes = round > 0 && commit == 0 ? 2 : 1
                #expect(after == before + writes, "round \(round) commit \(commit): \(before) -> \(after)")
            }
            // Copy everything back and empty the log: the next commit starts it over at the top.
            #expect(try plain.scalarText("PRAGMA wal_checkpoint(TRUNCATE)") == "0")
            #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        }
        try writer.execute("INSERT INTO t (body) VALUES (zeroblob(100))")
        expected += 1
        #expect(try count() == expected)
        #expect(try plain.scalarText("PRAGMA integrity_check") == "ok")
    }

    /// What a coalescing writer committed is in the files when the process ends without closing
    /// anything: a fresh connection (SQLite's recovery of the log) finds every row.
    @Test func committedRowsAreInTheFilesWithoutAClose() throws {
        let dir = TempDir()
        let path: String
        do {
            let pair = try Pair(dir)
            path = pair.path
            for i in 0..<20 { try pair.insert(50, bodySize: 300, from: i * 50) }
            // Copy the files as they are while both connections are open: what a crash leaves.
            for suffix in ["", "-wal"] {
                try FileManager.default.copyItem(atPath: path + suffix, toPath: dir.path + "/copy.db" + suffix)
            }
        }
        let copy = try Database(path: dir.path + "/copy.db")
        #expect(try copy.scalarInt("SELECT count(*) FROM t") == 1000)
        #expect(try copy.scalarText("PRAGMA integrity_check") == "ok")
    }

    @Test func aLogHeaderGivesItsPageSize() {
        func header(magic: UInt32, size: UInt32) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: 32)
            for i in 0..<4 {
                bytes[i] = UInt8(truncatingIfNeeded: magic >> (24 - 8 * i))
                bytes[8 + i] = UInt8(truncatingIfNeeded: size >> (24 - 8 * i))
            }
            return bytes
        }
        for (magic, size, expected) in [(0x377f_0682, 4096, 4096), (0x377f_0683, 512, 512), (0x377f_0682, 65536, 65536), (0x377f_0682, 1, 0), (0x377f_0682, 131072, 0),
                                         (0x377f_0682, 32768, 32768), (0x377f_0682, 3000, 0), (0x377f_0682, 256, 0),
                                         (0x1234_5678, 4096, 0), (0x377f_0682, 0, 0)] as [(UInt32, UInt32, Int)] {
            let bytes = header(magic: magic, size: size)
            #expect(bytes.withUnsafeBytes { CoalescingVFS.pageSize(logHeader: $0.baseAddress!) } == expected, "magic \(magic) size \(size)")
        }
    }
}
