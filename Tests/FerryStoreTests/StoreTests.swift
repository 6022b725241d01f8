import FerryTestSupport
import Foundation
import Synchronization
import Testing
@testable import FerryModel
@testable import FerryStore
import FerrySQLite

@Suite struct StoreTests {
    /// The database holds the owner keys and relay tokens: its files are this user's alone,
    /// whatever the directory's mode (one made beforehand is often 0755), and files left with
    /// a wider mode by an older version are narrowed.
    @Test func theDatabaseFilesAreReadableByThisUserOnly() throws {
        let dir = TempDir()
        #expect(chmod(dir.path, 0o755) == 0)
        func mode(_ path: String) -> mode_t {
            var st = stat()
            return stat(path, &st) == 0 ? st.st_mode & 0o777 : 0o7777
        }
        let store = try makeStore(dir)
        try store.put(entity: "note", id: "a", payload: "{}")
        for file in ["ferry.db", "ferry.db-wal"] {
            #expect(mode(dir.path + "/" + file) & 0o077 == 0, "\(file) has mode \(String(mode(dir.path + "/" + file), radix: 8))")
        }
        // The store's connections keep the log's index in memory (process-exclusive): no -shm file.
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/ferry.db-shm"))
        let old = dir.path + "/old.db"
        do {
            let db = try Database(path: old)
            try db.execute("PRAGMA journal_mode = WAL; CREATE TABLE t (x); INSERT INTO t VALUES (1)")
        }
        for file in [old, old + "-wal", old + "-shm"] where FileManager.default.fileExists(atPath: file) { #expect(chmod(file, 0o644) == 0) }
        let reopened = try Database(path: old)
        #expect(try reopened.scalarInt("SELECT x FROM t") == 1)
        for file in [old, old + "-wal", old + "-shm"] where FileManager.default.fileExists(atPath: file) {
            #expect(mode(file) == 0o600, "\(file) has mode \(String(mode(file), radix: 8))")
        }
    }

    @Test func putGetListDelete() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        let a = try store.put(entity: "note", id: "A", payload: #"{"title":"one"}"#)
        #expect(a.space == "private" && a.entity == "note" && a.id == "A" && !a.deleted && a.seq == 1)
        #expect(a.hlc.node == store.nodeID)
        let generated = try store.put(entity: "note", payload: #"{"title":"two"}"#)
        #expect(UUID(uuidString: generated.id) != nil && generated.id == generated.id.uppercased())
        #expect(try store.get(entity: "note", id: "A") == a)
        #expect(try store.get(entity: "note", id: "missing") == nil)

        let edited = try store.put(entity: "note", id: "A", payload: #"{"title":"uno"}"#)
        #expect(edited.hlc > a.hlc && edited.seq > generated.seq)

        let page = try store.list(entity: "note")
        #expect(page.records.map(\.id) == ["A", generated.id].sorted())
        #expect(page.next == nil)

        let tomb = try store.delete(entity: "note", id: "A")
        #expect(tomb.deleted && tomb.payload == nil && tomb.hlc > edited.hlc)
        #expect(try store.delete(entity: "note", id: "A") == tomb)   // idempotent
        #expect(try store.list(entity: "note").records.map(\.id) == [generated.id])
        #expect(try store.list(entity: "note", includeDeleted: true).records.count == 2)
        #expect(throws: FerryError.notFound(space: "private", entity: "note", id: "nope")) {
            try store.delete(entity: "note", id: "nope")
        }
        // Writing a deleted record again brings it back with a newer stamp.
        let back = try store.put(entity: "note", id: "A", payload: "{}")
        #expect(!back.deleted && back.hlc > tomb.hlc)
    }

    @Test func listPagesByIdAndByStampAndFilters() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        var requests: [PutRequest] = []
        for i in 0..<25 {
            requests.append(PutRequest(entity: "task", id: String(format: "T%03d", 24 - i),
                                       payload: #"{"n":\#(i),"done":\#(i % 2 == 0),"tag":"\#(i % 3 == 0 ? "x" : "y")"}"#))
        }
        _ = try store.putMany(requests)
        var ids: [String] = []
        var after: String?
        repeat {
            let page = try store.list(entity: "task", after: after, limit: 10)
            ids += page.records.map(\.id)
            after = page.next
        } while after != nil
        #expect(ids == (0..<25).map { String(format: "T%03d", $0) })

        var byStamp: [Stamp] = []
        after = nil
        repeat {
            let page = try store.list(entity: "task", after: after, limit: 7, order: .stamp)
            byStamp += page.records.map(\.hlc)
            after = page.next
        } while after != nil
        #expect(byStamp.count == 25 && byStamp == byStamp.sorted())

        let done = try store.list(entity: "task", where: [("done", .bool(true))])
        #expect(done.records.count == 13)
        let tagged = try store.list(entity: "task", where: [("tag", .string("x")), ("done", .bool(false))])
        #expect(tagged.records.count == 4)   // i in 3, 9, 15, 21
        let n = try store.list(entity: "task", where: [("n", .int(7))])
        #expect(n.records.map(\.id) == ["T017"])
    }

    /// `where` compares type and value: 1 is not true, a missing field is not null, an integer
    /// compares exactly, and field names are matched exactly, quotes and backslashes included.
    @Test func whereMatchesTypeAndValueAndExactFieldNames() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        let payloads = ["one": #"{"n":1}"#, "true": #"{"n":true}"#, "null": #"{"n":null}"#, "none": #"{"m":1}"#,
                        "real": #"{"n":1.5}"#, "text": #"{"n":"1"}"#, "big": #"{"n":9007199254740993}"#,
                        "quote": #"{"a\"b":1}"#, "plain": #"{"ab":1}"#, "slash": #"{"a\\b":1}"#]
        for (id, payload) in payloads { _ = try store.put(entity: "wh", id: id, payload: payload) }
        func ids(_ field: String, _ value: FilterValue) throws -> [String] {
            try store.list(entity: "wh", where: [(field, value)]).records.map(\.id).sorted()
        }
        #expect(try ids("n", .int(1)) == ["one"])
        #expect(try ids("n", .bool(true)) == ["true"])
        #expect(try ids("n", .null) == ["null"])
        #expect(try ids("n", .double(1.5)) == ["real"])
        #expect(try ids("n", .double(1)) == ["one"])
        #expect(try ids("n", .string("1")) == ["text"])
        #expect(try ids("n", .int(9007199254740993)) == ["big"])
        #expect(try ids("n", .int(9007199254740992)).isEmpty)
        #expect(try ids("a\"b", .int(1)) == ["quote"])
        #expect(try ids("a\\b", .int(1)) == ["slash"])
        #expect(try ids("ab", .int(1)) == ["plain"])
    }

    /// A stamp-order cursor that is not one (empty, a bar alone, an id-order cursor) is refused
    /// with `invalidStamp`, never read as something else.
    @Test func aStampCursorThatIsNotOneIsRefused() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        for i in 0..<3 { _ = try store.put(entity: "pg", id: "P\(i)", payload: "{}") }
        for bad in ["", "|", "garbage", "P1", "|P1", "2026-01-01|P1"] {
            #expect(throws: FerryError.self, "\(bad)") { try store.list(entity: "pg", after: bad, order: .stamp) }
        }
        let first = try store.list(entity: "pg", limit: 1, order: .stamp)
        let next = try #require(first.next)
        #expect(try store.list(entity: "pg", after: next, limit: 10, order: .stamp).records.count == 2)
    }

    @Test func spacesKeepRecordsApart() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.createSpace(name: "team")
        #expect(throws: FerryError.spaceExists("team")) { try store.createSpace(name: "team") }
        #expect(throws: FerryError.invalidSpaceName("Team")) { try store.createSpace(name: "Team") }
        try store.put(entity: "item", id: "1", payload: #"{"where":"private"}"#)
        try store.put(space: "team", entity: "item", id: "1", payload: #"{"where":"team"}"#)
        #expect(try store.get(entity: "item", id: "1")?.payload == #"{"where":"private"}"#)
        #expect(try store.get(space: "team", entity: "item", id: "1")?.payload == #"{"where":"team"}"#)
        #expect(store.spaces().map(\.name) == ["private", "team"])
        #expect(throws: FerryError.spaceNotFound("nope")) { try store.get(space: "nope", entity: "item", id: "1") }
        let teamChanges = try store.changes(since: 0, spaces: ["team"]).records
        #expect(teamChanges.count == 1 && teamChanges[0].space == "team")
    }

    @Test func changeLogResumesFromACursorAcrossReopen() throws {
        let dir = TempDir()
        var cursor: Int64 = 0
        do {
            let store = try makeStore(dir)
            try store.put(entity: "a", id: "1", payload: "{}")
            try store.put(entity: "b", id: "2", payload: "{}")
            let changes = try store.changes(since: 0).records
            #expect(changes.map(\.seq) == [1, 2])
            cursor = changes.last!.seq
            try store.put(entity: "a", id: "3", payload: "{}")
            try store.put(entity: "a", id: "1", payload: #"{"v":2}"#)
        }
        let store = try makeStore(dir)
        let changes = try store.changes(since: cursor).records
        #expect(changes.map(\.id) == ["3", "1"])
        #expect(changes.map(\.seq) == [3, 4])
        #expect(try store.changes(since: 0, entities: ["b"]).records.map(\.id) == ["2"])
        #expect(try store.changes(since: 0, entities: ["b"]).through == 4)
        let next = try store.put(entity: "a", id: "4", payload: "{}")
        #expect(next.seq == 5)   // strictly increasing across restarts
    }

    @Test func clockAndNodeIdSurviveReopen() throws {
        let dir = TempDir()
        let wall = TestWall()
        let first: Record
        let node: NodeID
        do {
            let store = try makeStore(dir, wall: wall)
            node = store.nodeID
            first = try store.put(entity: "a", id: "1", payload: "{}")
        }
        wall.advance(-3_600_000)   // the wall clock went back an hour while the daemon was down
        let store = try makeStore(dir, wall: wall)
        #expect(store.nodeID == node)
        let second = try store.put(entity: "a", id: "2", payload: "{}")
        #expect(second.hlc > first.hlc)
    }

    /// The clock is saved as a ceiling a lease ahead, not in every transaction, and a store that
    /// opens again, even at once and with the wall clock standing still, stamps above everything
    /// it issued before.
    @Test func theClockIsSavedAsACeilingThatReopenStartsFrom() throws {
        let dir = TempDir()
        let wall = TestWall()
        func savedClock() throws -> Stamp? {
            let db = try Database(path: dir.path + "/ferry.db", mode: .readOnly)
            return try db.scalarText("SELECT value FROM engine_state WHERE key = 'clock'").flatMap(Stamp.parse)
        }
        var last: Record
        do {
            let store = try makeStore(dir, wall: wall)
            last = try store.put(entity: "a", id: "0", payload: "{}")
            let ceiling = try #require(try savedClock())
            #expect(ceiling > last.hlc)
            for i in 1...20 {
                wall.advance(10)
                last = try store.put(entity: "a", id: "\(i)", payload: "{}")
            }
            // 200 ms of writes inside a 1 s lease: the saved ceiling did not move.
            #expect(try savedClock() == ceiling)
            #expect(ceiling > last.hlc)
            wall.advance(Writer.clockLeaseMillis)
            last = try store.put(entity: "a", id: "past", payload: "{}")
            let next = try #require(try savedClock())
            #expect(next > ceiling)
            #expect(next > last.hlc)
        }
        let store = try makeStore(dir, wall: wall)
        let after = try store.put(entity: "a", id: "reopened", payload: "{}")
        #expect(after.hlc > last.hlc)
    }

    /// A state directory opened on another machine (copied or restored there) takes a new node
    /// id, so the copy and the original sync as two devices; reopening on the same machine, or
    /// where no machine id is known, keeps it.
    @Test func aStoreOpenedOnAnotherMachineTakesANewNodeID() throws {
        let dir = TempDir()
        let machine = Mutex<String?>("aaaa")
        var seed: UInt64 = 1
        func open() throws -> Store {
            seed += 1
            let next = seed
            return try makeStore(dir) { config in
                config.machineID = { machine.withLock { $0 } }
                config.random64 = { next }
            }
        }
        let first = try open().nodeID
        let same = try open()
        #expect(same.nodeID == first && same.replacedNodeID == nil)
        let record = try same.put(entity: "a", id: "1", payload: "{}")
        machine.withLock { $0 = "bbbb" }
        let moved = try open()
        #expect(moved.nodeID != first)
        #expect(moved.replacedNodeID == first)
        #expect(try moved.get(entity: "a", id: "1")?.hlc == record.hlc)   // the data stays
        #expect(try moved.put(entity: "a", id: "2", payload: "{}").hlc.node == moved.nodeID)
        machine.withLock { $0 = nil }   // no machine id: nothing to compare
        #expect(try open().nodeID == moved.nodeID)
        machine.withLock { $0 = "bbbb" }
        #expect(try open().replacedNodeID == nil)
    }

    @Test func immutableKindsRefuseLocalChanges() throws {
        let dir = TempDir()
        let store = try makeStore(dir, immutable: ["stock.movement"])
        try store.put(entity: "stock.movement", id: "M1", payload: #"{"qty":5}"#)
        #expect(throws: FerryError.immutableRecord(entity: "stock.movement", id: "M1")) {
            try store.put(entity: "stock.movement", id: "M1", payload: #"{"qty":6}"#)
        }
        #expect(throws: FerryError.immutableRecord(entity: "stock.movement", id: "M1")) {
            try store.delete(entity: "stock.movement", id: "M1")
        }
        #expect(try store.get(entity: "stock.movement", id: "M1")?.payload == #"{"qty":5}"#)
    }

    @Test func remoteVersionsMergeByStamp() throws {
        let dir = TempDir()
        let wall = TestWall()
        let store = try makeStore(dir, wall: wall, immutable: ["ledger"])
        let local = try store.put(entity: "note", id: "N", payload: #"{"v":"local"}"#)
        let other = NodeID(0xfeed)
        let older = RecordVersion(entity: "note", id: "N", hlc: Stamp(millis: local.hlc.millis - 10, counter: 0, node: other),
                                  deleted: false, payload: #"{"v":"older"}"#)
        let newer = RecordVersion(entity: "note", id: "N", hlc: Stamp(millis: local.hlc.millis + 10, counter: 0, node: other),
                                  deleted: false, payload: #"{"v":"newer"}"#)
        let results = try store.applyRemote([older, newer, newer], origin: .remote(transport: "t"))
        #expect(results[0] == .lost)
        guard case .applied = results[1] else { Issue.record("newer not applied: \(results)"); return }
        #expect(results[2] == .duplicate)
        #expect(try store.get(entity: "note", id: "N")?.payload == #"{"v":"newer"}"#)
        // The clock moved past the remote stamp: the next local edit wins.
        let edit = try store.put(entity: "note", id: "N", payload: #"{"v":"edit"}"#)
        #expect(edit.hlc > newer.hlc)

        // A remote tombstone wins over older versions and keeps them from coming back.
        let tomb = RecordVersion(entity: "note", id: "N", hlc: edit.hlc.successor(node: other), deleted: true, payload: nil)
        _ = try store.applyRemote([tomb], origin: .remote(transport: "t"))
        #expect(try store.applyRemote([newer], origin: .remote(transport: "t")) == [.lost])
        #expect(try store.get(entity: "note", id: "N")?.deleted == true)

        // Immutable kinds keep the smallest stamp.
        let first = RecordVersion(entity: "ledger", id: "L", hlc: Stamp(millis: 100, counter: 0, node: other), deleted: false, payload: #"{"n":1}"#)
        let second = RecordVersion(entity: "ledger", id: "L", hlc: Stamp(millis: 200, counter: 0, node: NodeID(7)), deleted: false, payload: #"{"n":2}"#)
        _ = try store.applyRemote([second], origin: .remote(transport: "t"))
        _ = try store.applyRemote([first], origin: .remote(transport: "t"))
        _ = try store.applyRemote([second], origin: .remote(transport: "t"))
        #expect(try store.get(entity: "ledger", id: "L")?.payload == #"{"n":1}"#)

        // Unknown kinds are stored and kept unchanged.
        let odd = RecordVersion(entity: "future.kind-v9", id: "x", hlc: Stamp(millis: 300, counter: 0, node: other), deleted: false,
                                payload: #"{"nested":{"deep":[1,2,{"k":null}]},"u":"\u00e9"}"#)
        _ = try store.applyRemote([odd], origin: .remote(transport: "t"))
        #expect(try store.get(entity: "future.kind-v9", id: "x")?.version == odd)
    }

    @Test func farFutureStampsAreStoredButDoNotDragTheClock() throws {
        let dir = TempDir()
        let wall = TestWall()
        let store = try makeStore(dir, wall: wall)
        let future = RecordVersion(entity: "note", id: "F", hlc: Stamp(millis: wall.read() + 86_400_000, counter: 0, node: NodeID(.max)),
                                   deleted: false, payload: #"{"v":"future"}"#)
        _ = try store.applyRemote([future], origin: .remote(transport: "t"))
        #expect(try store.get(entity: "note", id: "F")?.version == future)
        let unrelated = try store.put(entity: "note", id: "G", payload: "{}")
        #expect(unrelated.hlc.millis == wall.read())
        let edit = try store.put(entity: "note", id: "F", payload: #"{"v":"edited"}"#)
        #expect(edit.hlc > future.hlc)
    }

    @Test func losingVersionsAreKeptBoundedAndRestorable() throws {
        let dir = TempDir()
        let store = try makeStore(dir) { $0.conflictHistory = 3 }
        let local = try store.put(entity: "note", id: "C", payload: #"{"v":"mine"}"#)
        let other = NodeID(0xbeef)
        // A concurrent remote edit with a greater stamp wins; the local version is kept.
        let theirs = RecordVersion(entity: "note", id: "C", hlc: local.hlc.successor(node: other), deleted: false, payload: #"{"v":"theirs"}"#)
        _ = try store.applyRemote([theirs], origin: .remote(transport: "relay"))
        var conflicts = try store.conflicts(entity: "note", id: "C")
        #expect(conflicts.count == 1)
        #expect(conflicts[0].version.payload == #"{"v":"mine"}"# && conflicts[0].origin == .local && conflicts[0].winner == theirs.hlc)
        // An older remote version loses and is kept with where it came from.
        let stale = RecordVersion(entity: "note", id: "C", hlc: Stamp(millis: 5, counter: 0, node: NodeID(0xcafe)), deleted: false, payload: #"{"v":"stale"}"#)
        _ = try store.applyRemote([stale], origin: .remote(transport: "folder"))
        conflicts = try store.conflicts(entity: "note", id: "C")
        #expect(conflicts.first?.origin == .remote(transport: "folder"))
        // The same losing version again, through another transport: kept once.
        _ = try store.applyRemote([stale], origin: .remote(transport: "relay"))
        #expect(try store.conflicts(entity: "note", id: "C").count == 2)
        for i in 0..<5 {
            let v = RecordVersion(entity: "note", id: "C", hlc: Stamp(millis: Int64(10 + i), counter: 0, node: NodeID(0xcafe)),
                                  deleted: false, payload: #"{"v":\#(i)}"#)
            _ = try store.applyRemote([v], origin: .remote(transport: "folder"))
        }
        conflicts = try store.conflicts(entity: "note", id: "C")
        #expect(conflicts.count == 3)   // bounded
        #expect(conflicts.map(\.version.payload) == [#"{"v":4}"#, #"{"v":3}"#, #"{"v":2}"#])
        let restored = try store.restoreConflict(entity: "note", id: "C", stamp: conflicts[1].version.hlc)
        #expect(restored.payload == #"{"v":3}"# && restored.hlc > theirs.hlc)
        #expect(throws: FerryError.self) { try store.restoreConflict(entity: "note", id: "C", stamp: local.hlc) }
    }

    @Test func digestIsOrderIndependent() throws {
        let a = TempDir("a"), b = TempDir("b")
        let sa = try makeStore(a), sb = try makeStore(b)
        var versions: [RecordVersion] = []
        for i in 0..<50 {
            let stamp = Stamp(millis: Int64(i), counter: 0, node: NodeID(UInt64(i % 3)))
            let deleted = i % 7 == 0
            let payload: String? = deleted ? nil : "{\"i\":\(i)}"
            versions.append(RecordVersion(entity: "e", id: "\(i % 10)", hlc: stamp, deleted: deleted, payload: payload))
        }
        _ = try sa.applyRemote(versions, origin: .remote(transport: "t"))
        for v in versions.reversed() { _ = try sb.applyRemote([v], origin: .remote(transport: "t")) }
        #expect(try sa.digest() == sb.digest())
    }

    @Test func refusesForeignAndNewerDatabases() throws {
        let dir = TempDir()
        let db = try Database(path: dir.path + "/ferry.db")
        try db.execute("CREATE TABLE other (x); PRAGMA application_id = 1234;")
        #expect(throws: FerryError.self) { try makeStore(dir) }
        let dir2 = TempDir()
        do { _ = try makeStore(dir2) }
        let db2 = try Database(path: dir2.path + "/ferry.db")
        try db2.execute("PRAGMA user_version = 99")
        let error = #expect(throws: FerryError.self) { try makeStore(dir2) }
        #expect(error?.description.contains("newer") == true)
    }

    /// Status counts live records and tombstones without reading a record: all records from
    /// the key index, tombstones from theirs (schema version 4). The counts follow puts,
    /// deletes, remote tombstones and a record written again after its delete, in two spaces.
    @Test func statsCountRecordsAndTombstonesFromIndexes() throws {
        let dir = TempDir()
        do {
            let store = try makeStore(dir)
            try store.createSpace(name: "team")
            for i in 0..<10 { _ = try store.put(entity: "note", id: "n\(i)", payload: "{}") }
            for i in 0..<4 { _ = try store.put(space: "team", entity: "task", id: "t\(i)", payload: "{}") }
            for i in 0..<3 { _ = try store.delete(entity: "note", id: "n\(i)") }
            _ = try store.delete(space: "team", entity: "task", id: "t0")
            _ = try store.applyRemote([RecordVersion(entity: "note", id: "gone", hlc: Stamp(millis: 1, counter: 0, node: NodeID(9)),
                                                     deleted: true, payload: nil, attachments: [])], origin: .remote(transport: "t"))
            _ = try store.put(entity: "note", id: "n0", payload: #"{"again":true}"#)
            let stats = try store.stats()
            #expect(stats.records == 11 && stats.tombstones == 4, "\(stats.records) live, \(stats.tombstones) tombstones")
        }
        let db = try Database(path: dir.path + "/ferry.db")
        func plan(_ sql: String) throws -> String {
            let statement = try db.prepare("EXPLAIN QUERY PLAN " + sql)
            var lines: [String] = []
            while try statement.step() { lines.append(statement.text(3) ?? "") }
            return lines.joined(separator: "; ")
        }
        #expect(try plan(Store.recordCountSQL).contains("COVERING INDEX"))
        #expect(try plan(Store.tombstoneCountSQL).contains("records_tombstones"))
    }

    @Test func schemaIsMigratedAndMarked() throws {
        let dir = TempDir()
        do { _ = try makeStore(dir) }
        let db = try Database(path: dir.path + "/ferry.db")
        #expect(try db.scalarInt("PRAGMA application_id") == Int64(Schema.applicationID))
        #expect(try db.scalarInt("PRAGMA user_version") == Int64(Schema.latestVersion))
        #expect(try db.scalarText("PRAGMA journal_mode") == "wal")
        let tables = try db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        var names: [String] = []
        while try tables.step() { names.append(tables.text(0)!) }
        #expect(Set(names).isSuperset(of: ["records", "changes", "outbox_delivery", "spaces", "transports",
                                            "progress", "losers", "attachments", "engine_state"]))
        #expect(!names.contains("outbox"), "version 3 keeps transport cursors instead")
    }

    /// The change log keeps one row per record, its latest change, however often records
    /// change, locally or from elsewhere (protocol.md section 10); reading changes after any
    /// cursor still gives each record once at its newest version. A store of schema version 1,
    /// which kept every row, loses the superseded ones when it opens.
    @Test func theChangeLogHoldsOneRowPerRecord() throws {
        let dir = TempDir()
        do {
            let store = try makeStore(dir)
            for round in 0..<20 {
                for id in ["a", "b", "c"] { _ = try store.put(entity: "note", id: id, payload: #"{"round":\#(round)}"#) }
            }
            _ = try store.delete(entity: "note", id: "b")
            let remote = (0..<5).map { i in
                RecordVersion(entity: "note", id: "c", hlc: Stamp(millis: Int64(4_000_000_000_000 + i), counter: 0, node: NodeID(9)),
                              deleted: false, payload: #"{"remote":\#(i)}"#)
            }
            _ = try store.applyRemote(remote, origin: .remote(transport: "t"))
            let db = try Database(path: dir.path + "/ferry.db")
            #expect(try db.scalarInt("SELECT count(*) FROM changes") == 3)
            #expect(try db.scalarInt("SELECT count(*) FROM records r JOIN changes c ON c.seq = r.seq AND c.rid = r.rid") == 3)
            let all = try store.changes(since: 0)
            #expect(all.records.map(\.id) == ["a", "b", "c"])
            #expect(all.records.map(\.payload) == [#"{"round":19}"#, nil, #"{"remote":4}"#])
            #expect(all.through == store.lastSeq)
            for cursor in stride(from: 0, through: store.lastSeq, by: 7) {
                let page = try store.changes(since: cursor)
                #expect(page.records.allSatisfy { $0.seq > cursor } && page.through == store.lastSeq)
                #expect(Set(all.records.filter { $0.seq > cursor }.map(\.id)) == Set(page.records.map(\.id)))
            }
            // As a store of version 1 left it: superseded rows, kept.
            try db.execute("INSERT INTO changes (seq, rid, sid, origin) SELECT seq - 100000, rid, sid, 'local' FROM changes")
            try Self.downgradeToVersion2(db)
            try db.execute("PRAGMA user_version = 1")
            #expect(try db.scalarInt("SELECT count(*) FROM changes") == 6)
        }
        let store = try makeStore(dir)
        let db = try Database(path: dir.path + "/ferry.db")
        #expect(try db.scalarInt("SELECT count(*) FROM changes") == 3)
        #expect(try store.changes(since: 0).records.map(\.id) == ["a", "b", "c"])
    }

    /// Undoes migration 6 on a store made by this build: what a store of version 5 looked like.
    static func downgradeToVersion5(_ db: Database) throws {
        try db.execute("""
            DROP TABLE blob_deletions;
            ALTER TABLE attachment_refs DROP COLUMN current;
            PRAGMA user_version = 5;
            """)
    }

    /// Undoes migrations 6 and 5 on a store made by this build: what a store of version 4 looked like.
    static func downgradeToVersion4(_ db: Database) throws {
        try downgradeToVersion5(db)
        try db.execute("""
            DROP INDEX attachments_missing;
            DROP TABLE attachment_refs;
            PRAGMA user_version = 4;
            """)
    }

    /// Undoes migrations 5, 4 and 3 on a store made by this build: what a store of version 2
    /// looked like.
    static func downgradeToVersion2(_ db: Database) throws {
        try downgradeToVersion4(db)
        try db.execute("""
            DROP INDEX records_with_attachments;
            DROP INDEX losers_with_attachments;
            DROP INDEX records_tombstones;
            ALTER TABLE transports DROP COLUMN sent;
            ALTER TABLE transports DROP COLUMN since;
            CREATE TABLE outbox (rid INTEGER PRIMARY KEY, sid INTEGER NOT NULL, hlc TEXT NOT NULL, seq INTEGER NOT NULL,
                                 queued_at INTEGER NOT NULL);
            CREATE INDEX outbox_by_space ON outbox (sid, seq);
            PRAGMA user_version = 2;
            """)
    }

    /// A store of version 2 kept an outbox row per queued record and per-transport
    /// acknowledgements. Opened by this build, each transport's cursor starts before the first
    /// record it still needed, refusals stay, and nothing it lacked is skipped.
    @Test func anOutboxOfVersion2BecomesTransportCursors() throws {
        let dir = TempDir()
        var records: [Record] = []
        do {
            let store = try makeStore(dir)
            try store.addTransport(name: "folder", kind: "folder")
            try store.addTransport(name: "relay", kind: "relay")
            for i in 0..<5 { records.append(try store.put(entity: "note", id: "N\(i)", payload: "{}")) }
        }
        do {
            let db = try Database(path: dir.path + "/ferry.db")
            try Self.downgradeToVersion2(db)
            // N1 and N3 were still queued: N1 taken by the folder, N3 refused by the relay.
            for r in [records[1], records[3]] {
                try db.execute("INSERT INTO outbox (rid, sid, hlc, seq, queued_at) SELECT rid, sid, hlc, seq, 0 FROM records WHERE id = '\(r.id)'")
            }
            try db.execute("""
                INSERT INTO outbox_delivery (rid, transport, acked_hlc, error, error_hlc, updated_at)
                SELECT rid, 'folder', hlc, NULL, NULL, 0 FROM records WHERE id = 'N1';
                INSERT INTO outbox_delivery (rid, transport, acked_hlc, error, error_hlc, updated_at)
                SELECT rid, 'relay', NULL, 'too large', hlc, 0 FROM records WHERE id = 'N3';
                """)
        }
        let store = try makeStore(dir)
        let db = try Database(path: dir.path + "/ferry.db")
        #expect(try db.scalarInt("PRAGMA user_version") == Int64(Schema.latestVersion))
        #expect(try db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'outbox'") == 0)
        let folder = try store.pending(transport: "folder").items.map(\.version.id)
        let relay = try store.pending(transport: "relay").items.map(\.version.id)
        #expect(folder.contains("N3") && !folder.contains("N0") && !folder.contains("N1") && !folder.contains("N2"), "\(folder)")
        #expect(relay.contains("N1") && !relay.contains("N0") && !relay.contains("N3"), "\(relay)")
        #expect(try store.outbox(errorsOnly: true).map(\.id) == ["N3"])
        #expect(try store.outbox(errorsOnly: true).first?.deliveries.map(\.error) == ["too large"])
    }

    /// A version-2 store in the middle of re-sending everything to a transport that started
    /// over (or was re-added under the same name, pointing elsewhere) still sends it the
    /// records it delivered earlier (origin `remote:<name>`) after the migration.
    @Test func aVersion2BacklogOfRecordsFromTheTransportItselfIsStillSentAfterTheMigration() throws {
        let dir = TempDir()
        let remote = RecordVersion(entity: "note", id: "R", hlc: Stamp(millis: 1, counter: 0, node: NodeID(9)),
                                   deleted: false, payload: "{}")
        do {
            let store = try makeStore(dir)
            try store.addTransport(name: "folder", kind: "folder")
            _ = try store.applyRemote([remote], origin: .remote(transport: "folder"))
            _ = try store.put(entity: "note", id: "L", payload: "{}")
        }
        do {
            let db = try Database(path: dir.path + "/ferry.db")
            try Self.downgradeToVersion2(db)
            // Version 2 after restartTransport("folder"): every record queued, nothing acknowledged.
            try db.execute("INSERT INTO outbox (rid, sid, hlc, seq, queued_at) SELECT rid, sid, hlc, seq, 0 FROM records")
        }
        let store = try makeStore(dir)
        let ids = try store.pending(transport: "folder").items.map(\.version.id)
        #expect(ids.sorted() == ["L", "R"], "\(ids)")
    }

    @Test func durabilityPragma() throws {
        let dir = TempDir()
        let store = try makeStore(dir) { $0.durability = .full }
        _ = store
        // The default configuration is FULL; the test helper chooses NORMAL for speed.
        #expect(StoreConfiguration(directory: "/x").durability == .full)
    }

    @Test func settingsPersist() throws {
        let dir = TempDir()
        do {
            let store = try makeStore(dir)
            try store.setSetting("log-level", "debug")
        }
        let store = try makeStore(dir)
        #expect(try store.setting("log-level") == "debug")
        try store.setSetting("log-level", nil)
        #expect(try store.setting("log-level") == nil)
    }
}
