import FerryRelay
import FerrySQLite
import FerrySync
import FerryTestSupport
import Foundation
import Testing

/// The SQLite relay's schema migrations keep every owner's events, numbers and cursors.
@Suite struct SQLiteSchemaTests {
    /// Version 2 keyed events by the 16-byte owner id; from version 3 they are keyed by the
    /// owner's number. A version-2 database opened by this build serves every owner the same
    /// events after the same cursors, takes pushes on from there, and numbers owners made later
    /// apart from the ones it had.
    @Test func version2EventsAreRekeyedByOwnerNumberWithNothingLost() throws {
        let dir = TempDir("relay-schema")
        let path = dir.path + "/relay.db"
        let owners = [TestEnvelopes.owner(), TestEnvelopes.owner()]
        var pushed: [[[UInt8]]] = []
        var millis: Int64 = 0
        func events(_ owner: OwnerID, _ count: Int) -> [IncomingEvent] {
            (0..<count).map { _ in
                millis += 1
                return TestEnvelopes.incoming(TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: millis))
            }
        }
        do {
            let storage = try SQLiteRelayStorage(path: path, synchronous: "NORMAL")
            for (i, owner) in owners.enumerated() {
                try storage.createOwner(owner, quotaBytes: nil, now: 1)
                #expect(try storage.addBlob(owner, key: String(repeating: "e", count: 64), size: 10, quotaBytes: 1 << 40, now: 7))
                let batch = events(owner, 3 + i)
                #expect(try storage.push(owner, events: batch, quotaBytes: 1 << 40, now: 2).allSatisfy { $0 == .stored })
                pushed.append(batch.map(\.bytes))
            }
        }
        // As version 2 left it: events keyed by the owner id, owners without numbers.
        do {
            let db = try Database(path: path)
            try db.execute("""
                CREATE TABLE events_v2 (id INTEGER PRIMARY KEY, owner BLOB NOT NULL, seq INTEGER NOT NULL, event BLOB NOT NULL,
                    stream BLOB NOT NULL, stamp BLOB NOT NULL, deleted INTEGER NOT NULL, stored_at INTEGER NOT NULL, data BLOB NOT NULL,
                    UNIQUE (owner, seq), UNIQUE (owner, stream), UNIQUE (owner, event));
                INSERT INTO events_v2 SELECT e.id, o.owner, e.seq, e.event, e.stream, e.stamp, e.deleted, e.stored_at, e.data
                    FROM events e JOIN owners o ON o.oid = e.oid;
                DROP TABLE events;
                ALTER TABLE events_v2 RENAME TO events;
                CREATE INDEX events_tombstones ON events(stored_at) WHERE deleted = 1;
                DROP INDEX owners_by_oid;
                ALTER TABLE owners DROP COLUMN oid;
                ALTER TABLE blobs DROP COLUMN used_at;
                PRAGMA user_version = 2;
                """)
            #expect(try db.scalarInt("SELECT count(*) FROM events") == 7)
        }
        let storage = try SQLiteRelayStorage(path: path, synchronous: "NORMAL")
        do {
            let db = try Database(path: path)
            #expect(try db.scalarInt("PRAGMA user_version") == 4)
            #expect(try db.scalarInt("SELECT count(DISTINCT oid) FROM owners") == 2)
        }
        // Version 4: a blob counts as used when it was stored.
        #expect(try storage.deleteBlob(owners[1], key: String(repeating: "e", count: 64), usedSince: 7) == .inUse(lastUsed: 7))
        #expect(try storage.deleteBlob(owners[1], key: String(repeating: "e", count: 64), usedSince: 8) == .deleted(size: 10))
        for (i, owner) in owners.enumerated() {
            let page = try storage.pull(owner, after: .start, limit: 100, maxBytes: 1 << 20)
            #expect(page.events == pushed[i])
            let more = events(owner, 1)
            #expect(try storage.push(owner, events: more, quotaBytes: 1 << 40, now: 3) == [.stored])
            #expect(try storage.push(owner, events: more, quotaBytes: 1 << 40, now: 3) == [.duplicate])
            #expect(try storage.pull(owner, after: page.cursor, limit: 100, maxBytes: 1 << 20).events == more.map(\.bytes))
        }
        let third = TestEnvelopes.owner()
        try storage.createOwner(third, quotaBytes: nil, now: 4)
        let thirds = events(third, 2)
        #expect(try storage.push(third, events: thirds, quotaBytes: 1 << 40, now: 4).allSatisfy { $0 == .stored })
        #expect(try storage.pull(third, after: .start, limit: 100, maxBytes: 1 << 20).events == thirds.map(\.bytes))
        #expect(try storage.pull(owners[0], after: .start, limit: 100, maxBytes: 1 << 20).events.count == 4)
        // Deleting one owner's copy leaves the others'.
        _ = try storage.deleteOwnerData(owners[0])
        #expect(try storage.pull(owners[1], after: .start, limit: 100, maxBytes: 1 << 20).events.count == 5)
        #expect(try storage.pull(third, after: .start, limit: 100, maxBytes: 1 << 20).events.count == 2)
    }
}
