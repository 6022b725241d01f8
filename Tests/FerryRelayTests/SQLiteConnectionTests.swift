@testable import FerryRelay
import FerryTestSupport
import Testing

/// How the SQLite relay's write connection is set up, where that matters for speed and nothing
/// else shows it.
@Suite struct SQLiteConnectionTests {
    /// Each push runs in a savepoint, whose undo copy of every page it changes would otherwise
    /// go to a temporary file, a write system call for each (`ferry-bench relay` made about
    /// 9,000 of them a second). 2 is `MEMORY`.
    @Test func savepointJournalsStayInMemory() throws {
        let dir = TempDir("relay-connection")
        let storage = try SQLiteRelayStorage(path: dir.path + "/relay.db")
        #expect(try storage.db.scalarInt("PRAGMA temp_store") == 2)
    }
}
