import FerrySQLite
import FerryTestSupport
import Foundation
import Testing
@testable import FerryModel
@testable import FerryStore

/// A store restored from an older backup on the same machine keeps its node id, and gets back
/// what a copy of it wrote after that backup as remote versions through the merge (the sync
/// engine applies its own envelopes the transports deliver). These tests play both copies with
/// real SQLite files: the backup is taken while the store is open and writing (`VACUUM INTO`, a
/// consistent copy, as a backup tool's SQLite-aware hook or a file-system snapshot makes).
@Suite struct RestoreTests {
    /// A consistent copy of the open store's database into the empty directory `to`.
    static func liveBackup(_ store: Store, to: TempDir) throws {
        let db = try Database(path: store.configuration.databasePath)
        try db.execute("VACUUM INTO '\(to.path)/ferry.db'")
    }

    /// Own versions written after the backup come back as `applied`, versions the backup had
    /// as `duplicate`; and they move the restored store's clock, so a new write after them is
    /// stamped after every one of them, even when the copy that wrote them ran ahead of the
    /// restored store's wall clock (it had seen a peer's clock a minute ahead).
    @Test func ownVersionsWrittenAfterTheBackupComeBackAndANewWriteWinsOverThem() throws {
        let original = TempDir(), backup = TempDir()
        let wall = TestWall()
        let store = try makeStore(original, wall: wall, node: 0xa1)
        let r1 = try store.put(entity: "note", id: "r1", payload: #"{"v":1}"#)
        try Self.liveBackup(store, to: backup)

        // The original goes on: within its clock lease (stamps below the ceiling the backup
        // holds), and then a minute ahead of the wall, after a peer's stamp from the future.
        wall.advance(10)
        let r1Edit = try store.put(entity: "note", id: "r1", payload: #"{"v":2}"#)
        let r2 = try store.put(entity: "note", id: "r2", payload: #"{"v":1}"#)
        let peer = RecordVersion(entity: "note", id: "p", hlc: Stamp(millis: wall.read() + 60_000, counter: 0, node: NodeID(0xb2)),
                                 deleted: false, payload: "{}")
        _ = try store.applyRemote([peer], origin: .remote(transport: "t"))
        let r3 = try store.put(entity: "note", id: "r3", payload: #"{"v":1}"#)
        let r2Delete = try store.delete(entity: "note", id: "r2")
        #expect(r3.hlc > peer.hlc && r2Delete.hlc > r3.hlc)
        let own = [r1, r1Edit, r2, r3, r2Delete].map(\.version)

        // Restored: the same machine, so the same node; its wall clock has not moved since.
        // (Opened in a scope of its own, so it is closed before it is opened again.)
        let restoredWall = TestWall()
        restoredWall.advance(20)
        let newest = try Self.getBack(own: own, peer: peer, into: try makeStore(backup, wall: restoredWall), original: store)
        let reopened = try makeStore(backup, wall: restoredWall)
        #expect(try reopened.put(entity: "note", id: "r5", payload: "{}").hlc > newest, "reopened, its clock is still past them")
    }

    /// Applies the original's `own` versions (and the peer's) to the `restored` store and checks
    /// what it holds; then writes on it after them. Returns the newest stamp it issued.
    static func getBack(own: [RecordVersion], peer: RecordVersion, into restored: Store, original: Store) throws -> Stamp {
        #expect(restored.nodeID == original.nodeID)
        #expect(try restored.get(entity: "note", id: "r2") == nil)
        let results = try restored.applyRemote(own + [peer], origin: .remote(transport: "t"))
        #expect(results[0] == .duplicate, "the backup had r1's first version: \(results)")
        #expect(results[1...].allSatisfy { if case .applied = $0 { true } else { false } }, "\(results)")
        #expect(try restored.get(entity: "note", id: "r1")?.payload == #"{"v":2}"#)
        #expect(try restored.get(entity: "note", id: "r2")?.deleted == true)
        #expect(try restored.digest() == original.digest())
        // Applying them again changes nothing (superseded ones lose), and a device's own
        // history is no conflict.
        let again = try restored.applyRemote(own, origin: .remote(transport: "t"))
        #expect(again.allSatisfy { $0 == .duplicate || $0 == .lost }, "\(again)")
        #expect(try restored.digest() == original.digest())
        #expect(try restored.conflicts(entity: "note", id: "r1").isEmpty)

        // New writes after the restore, an edit of a record it got back and a new record, are
        // both stamped after every version it got back.
        let newest = own.map(\.hlc).max()!
        let edit = try restored.put(entity: "note", id: "r3", payload: #"{"v":"after restore"}"#)
        let fresh = try restored.put(entity: "note", id: "r4", payload: "{}")
        #expect(edit.hlc > newest && fresh.hlc > newest, "\(edit.hlc) \(fresh.hlc) vs \(newest)")
        // The edit wins on the original too: it is the newest version of r3 anywhere.
        let there = try original.applyRemote([edit.version], origin: .remote(transport: "t"))
        #expect(there.first.map { if case .applied = $0 { true } else { false } } == true, "\(there)")
        #expect(try original.get(entity: "note", id: "r3")?.payload == #"{"v":"after restore"}"#)
        return max(edit.hlc, fresh.hlc)
    }
}
