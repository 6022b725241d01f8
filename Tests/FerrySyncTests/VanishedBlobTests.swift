import FerryModel
import FerryStore
import FerryTestSupport
import Foundation
import Synchronization
import Testing
@testable import FerrySync

/// A transport whose blobs can vanish (a synced folder's files can be deleted by a user or the
/// sync tool): the device puts back the blobs of what it sent that the host lost, and only
/// those.
@Suite struct VanishedBlobTests {
    /// The warnings an engine logged.
    final class Warnings: Sendable {
        private let lines = Mutex<[String]>([])
        var log: SyncLog { SyncLog { [self] level, message, _ in if level == .warning { lines.withLock { $0.append(message) } } } }
        var all: [String] { lines.withLock { $0 } }
    }

    /// A device on a log whose blobs can vanish, pushing one record at a time.
    static func device(_ log: MemoryLog, warnings: Warnings) async throws -> EngineDevice {
        log.state.withLock { $0.blobsCanVanish = true }
        let device = try EngineDevice(logs: ["shared": log], log: warnings.log) { $0.batchEnvelopes = 1 }
        await device.engine.reconcile()
        try await device.add("m", log: "shared")
        return device
    }

    /// A blob the host lost after the record that references it was sent is put back at
    /// SyncNow, and the device says so.
    @Test func aBlobTheHostLostIsPutBackAtSyncNow() async throws {
        let log = MemoryLog(), warnings = Warnings()
        let a = try await Self.device(log, warnings: warnings)
        defer { Task { await a.engine.stop() } }
        let info = try a.store.putAttachment(Array("the bytes".utf8))
        _ = try a.store.put(entity: "doc", id: "d1", payload: "{}", attachments: [info.sha256])
        #expect(try await eventually { try a.store.outbox().isEmpty && log.state.withLock { $0.blobs.count } == 1 })
        let key = try #require(log.state.withLock { $0.blobs.keys.first })
        _ = log.state.withLock { $0.blobs.removeValue(forKey: key) }
        a.engine.syncNow()
        #expect(try await eventually { log.state.withLock { $0.blobs[key] != nil } })
        #expect(try await eventually { warnings.all.contains { $0.contains("1 attachment file(s)") && $0.contains("were gone") } },
                "\(warnings.all)")
    }

    /// A device on two transports passes a record on from the first to the second before the
    /// attachment's blob arrived (it applied the record without it). When the bytes come
    /// through the first, the second is checked at once and gets the blob, not only at its
    /// next periodic check (10 minutes away here).
    @Test func aBlobPassedOnWithoutItsBytesGoesUpWhenTheyArrive() async throws {
        let one = MemoryLog(), two = MemoryLog()
        two.state.withLock { $0.blobsCanVanish = true }
        one.state.withLock { $0.blobsHidden = true }
        let fast: (inout SyncOptions) -> Void = { $0.attachmentWait = .milliseconds(300); $0.attachmentRetry = .milliseconds(200) }
        let a = try EngineDevice(logs: ["one": one, "two": two], configure: fast)
        let b = try EngineDevice(logs: ["one": one], configure: fast)
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        await a.engine.reconcile()
        try await b.engine.restoreOwner(space: Store.privateSpace, phrase: try a.engine.recoveryPhrase(space: Store.privateSpace))
        try await a.add("m1", log: "one")
        try await a.add("m2", log: "two")
        try await b.add("m1", log: "one")
        let sha = try b.store.putAttachment(Array("late bytes".utf8)).sha256
        _ = try b.store.put(entity: "doc", id: "d1", payload: "{}", attachments: [sha])
        #expect(try await eventually { try a.store.get(entity: "doc", id: "d1") != nil && a.store.outbox().isEmpty })
        #expect(two.count >= 1 && two.state.withLock { $0.blobs.isEmpty })
        one.state.withLock { $0.blobsHidden = false }
        #expect(try await eventually(.seconds(10)) { a.store.attachmentPath(sha) != nil })
        #expect(try await eventually(.seconds(10)) { two.state.withLock { $0.blobs.count } == 1 })
    }

    /// What a run killed mid-transfer left in the scratch directory (sealed and opened blobs)
    /// goes when the engine starts; a directory in it is left alone.
    @Test func theScratchDirectoryIsEmptiedAtStart() throws {
        let dir = TempDir("scratch")
        let scratch = dir.path + "/tmp"
        try FileManager.default.createDirectory(atPath: scratch + "/kept", withIntermediateDirectories: true)
        for name in ["up-1", "down-2.download", "plain-3"] {
            #expect(FileManager.default.createFile(atPath: scratch + "/" + name, contents: Data(repeating: 0, count: 4096)))
        }
        SyncEngine.emptyScratch(scratch)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch) == ["kept"])
    }

    /// Resumed with records not sent yet (the push sends them one at a time, slowly), the
    /// check leaves their blobs to the push: none is reported gone. Before, the check counted
    /// them and warned that the sync tool had deleted files the host never had.
    @Test func blobsOfRecordsNotSentYetAreLeftToThePush() async throws {
        let log = MemoryLog(), warnings = Warnings()
        log.state.withLock { $0.pushDelay = .milliseconds(150) }
        let a = try await Self.device(log, warnings: warnings)
        defer { Task { await a.engine.stop() } }
        try a.engine.setPaused(true)
        for i in 0..<6 {
            let info = try a.store.putAttachment(Array("attachment \(i)".utf8))
            _ = try a.store.put(entity: "doc", id: "d\(i)", payload: "{}", attachments: [info.sha256])
        }
        try a.engine.setPaused(false)
        #expect(try await eventually(.seconds(30)) { try a.store.outbox().isEmpty })
        #expect(log.state.withLock { $0.blobs.count } == 6)
        a.engine.syncNow()
        try await Task.sleep(for: .milliseconds(300))
        #expect(warnings.all.isEmpty, "\(warnings.all)")
    }
}
