import FerryTestSupport
import Foundation
import Testing
@testable import FerryStore

/// The store's database belongs to the process that has it open: another process (here
/// Python's sqlite3, over SQLite's ordinary VFS) can neither read nor write it until the store
/// is closed, and is told the database is locked; the store's own connections share it freely.
@Suite struct ProcessExclusiveTests {
    /// Runs `sql` on `path` from another process; its first column, or "locked".
    static func fromAnotherProcess(_ path: String, _ sql: String) throws -> String {
        let script = """
            import sqlite3, sys
            try:
                c = sqlite3.connect(sys.argv[1], timeout=0.3, isolation_level=None)
                row = c.execute(sys.argv[2]).fetchone()
                print(row[0] if row else "done")
            except sqlite3.OperationalError as e:
                print("locked" if "locked" in str(e) else "error: %s" % e)
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [ProcessInfo.processInfo.environment["FERRY_PYTHON"] ?? "python3", "-c", script, path, sql]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func anotherProcessIsKeptOutWhileTheStoreIsOpen() throws {
        let dir = TempDir("exclusive")
        var store: Store? = try makeStore(dir)
        let path = try #require(store).configuration.databasePath
        _ = try #require(store).put(entity: "note", id: "n1", payload: "{}")
        #expect(try Self.fromAnotherProcess(path, "SELECT count(*) FROM records") == "locked")
        #expect(try Self.fromAnotherProcess(path, "DELETE FROM records") == "locked")
        // Its own connections go on: the quick and the slow reader, and the writer.
        #expect(try store?.get(entity: "note", id: "n1") != nil)
        #expect(try store?.stats().records == 1)
        _ = try #require(store).put(entity: "note", id: "n2", payload: "{}")
        store = nil
        #expect(try Self.fromAnotherProcess(path, "SELECT count(*) FROM records WHERE deleted = 0") == "2")
        // And the store opens again once the other process has let go.
        store = try makeStore(dir)
        #expect(try store?.stats().records == 2)
    }
}
