import FerryModel
import FerryStore
import FerryTestSupport
import Foundation
import Testing
@testable import FerrySync

/// Blobs of attachments nothing in the space references any more leave the transport after the
/// retention; a blob referenced again stays, or goes up again; one the host keeps as in use is
/// asked for again later.
@Suite struct BlobRemovalTests {
    /// Two devices of one owner on `log`; `a` removes blobs after `retention`, `b` never does.
    static func pair(_ log: MemoryLog, retention: Duration) async throws -> (EngineDevice, EngineDevice) {
        let a = try EngineDevice(logs: ["shared": log], configure: { $0.blobRetention = retention })
        let b = try EngineDevice(logs: ["shared": log], configure: { $0.blobRetention = nil })
        await a.engine.reconcile()
        try await b.engine.restoreOwner(space: Store.privateSpace, phrase: try a.engine.recoveryPhrase(space: Store.privateSpace))
        try await a.add("m", log: "shared")
        try await b.add("m", log: "shared")
        return (a, b)
    }

    /// Puts a record referencing a new attachment on `device` and waits until the log holds its
    /// blob; returns the attachment's SHA-256 and the blob's key.
    static func attach(_ text: String, id: String, on device: EngineDevice, _ log: MemoryLog) async throws -> (sha: String, key: BlobKey) {
        let sha = try device.store.putAttachment(Array(text.utf8)).sha256
        _ = try device.store.put(entity: "doc", id: id, payload: "{}", attachments: [sha])
        #expect(try await eventually { try device.store.outbox().isEmpty && log.state.withLock { $0.blobs.count } >= 1 })
        let key = try #require(log.state.withLock { s in s.blobs.keys.first { _ in true } })
        return (sha, key)
    }

    /// Deleted on one device: once the other has it too, the blob leaves the host after the
    /// retention, only once, and the device's note goes. Attached again later, it goes up again
    /// (the device no longer takes it to be there).
    @Test func aBlobNothingReferencesLeavesTheHostAndComesBackWhenReferencedAgain() async throws {
        let log = MemoryLog()
        let (a, b) = try await Self.pair(log, retention: .zero)
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        let (sha, key) = try await Self.attach("the bytes", id: "d1", on: a, log)
        #expect(try await eventually { try b.store.get(entity: "doc", id: "d1") != nil && b.store.attachmentPath(sha) != nil })
        _ = try a.store.delete(entity: "doc", id: "d1")
        #expect(try await eventually { try b.store.get(entity: "doc", id: "d1")?.deleted == true })
        #expect(try await eventually(.seconds(10)) { log.state.withLock { $0.blobs[key] == nil } })
        #expect(try await eventually { try a.store.blobDeletionCount(transport: "m") == 0 })
        #expect(log.state.withLock { $0.deletedBlobs } == [key])
        // b keeps none of its own: it never removes blobs; its note stays for nothing to do.
        #expect(try b.store.blobDeletionCount(transport: "m") == 1)
        // Referenced again (the bytes are still on a): uploaded again before the record.
        _ = try a.store.put(entity: "doc", id: "d2", payload: "{}", attachments: [sha])
        #expect(try await eventually { log.state.withLock { $0.blobs[key] != nil } })
        #expect(try await eventually { try b.store.get(entity: "doc", id: "d2") != nil })
        #expect(try a.store.blobDeletionCount(transport: "m") == 0)
        try await Task.sleep(for: .milliseconds(1500))
        #expect(log.state.withLock { $0.blobs[key] != nil && $0.deletedBlobs == [key] })
    }

    /// A blob whose record is deleted and whose file is attached to another record before the
    /// retention ends stays on the host.
    @Test func aBlobReferencedAgainWithinTheRetentionStays() async throws {
        let log = MemoryLog()
        let (a, b) = try await Self.pair(log, retention: .seconds(2))
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        let (sha, key) = try await Self.attach("kept bytes", id: "d1", on: a, log)
        _ = try a.store.delete(entity: "doc", id: "d1")
        #expect(try a.store.blobDeletionCount(transport: "m") == 1)
        _ = try a.store.put(entity: "doc", id: "d2", payload: "{}", attachments: [sha])
        #expect(try a.store.blobDeletionCount(transport: "m") == 0)
        try await Task.sleep(for: .milliseconds(3500))
        a.engine.syncNow()
        try await Task.sleep(for: .milliseconds(500))
        #expect(log.state.withLock { $0.blobs[key] != nil && $0.deletedBlobs.isEmpty })
    }

    /// A blob the host keeps as in use (a device stored it or looked for it lately) stays
    /// noted, and goes at a later pass once the host lets it.
    @Test func aBlobTheHostKeepsInUseIsRemovedAtALaterPass() async throws {
        let log = MemoryLog()
        let (a, b) = try await Self.pair(log, retention: .zero)
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        let (_, key) = try await Self.attach("busy bytes", id: "d1", on: a, log)
        log.state.withLock { _ = $0.blobsInUse.insert(key) }
        _ = try a.store.delete(entity: "doc", id: "d1")
        try await Task.sleep(for: .milliseconds(2500))
        #expect(log.state.withLock { $0.blobs[key] != nil })
        #expect(try a.store.blobDeletionCount(transport: "m") == 1)
        log.state.withLock { $0.blobsInUse = [] }
        #expect(try await eventually(.seconds(10)) { log.state.withLock { $0.blobs[key] == nil } })
        #expect(try await eventually { try a.store.blobDeletionCount(transport: "m") == 0 })
    }

    /// A host that keeps a blob in use and says when to ask again is not asked before then,
    /// although the passes come every second.
    @Test func theHostsRetryAfterIsRespected() async throws {
        let log = MemoryLog()
        let (a, b) = try await Self.pair(log, retention: .zero)
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        let (_, key) = try await Self.attach("later bytes", id: "d1", on: a, log)
        log.state.withLock { s in
            s.blobsInUse.insert(key)
            s.inUseRetryAfter = .seconds(4)
        }
        _ = try a.store.delete(entity: "doc", id: "d1")
        #expect(try await eventually(.seconds(10)) { log.state.withLock { $0.deleteAttempts } == 1 })
        log.state.withLock { $0.blobsInUse = [] }
        try await Task.sleep(for: .milliseconds(2500))
        #expect(log.state.withLock { $0.deleteAttempts == 1 && $0.blobs[key] != nil })
        #expect(try await eventually(.seconds(10)) { log.state.withLock { $0.blobs[key] == nil } })
        #expect(log.state.withLock { $0.deleteAttempts } == 2)
    }

    /// A paused device removes nothing after its resume until a pull has caught up: another
    /// device may have referenced the blob again meanwhile.
    @Test func noBlobIsRemovedAfterAResumeBeforeThePullCatchesUp() async throws {
        let log = MemoryLog()
        let (a, b) = try await Self.pair(log, retention: .zero)
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        let (sha, key) = try await Self.attach("shared bytes", id: "d1", on: a, log)
        #expect(try await eventually { try b.store.attachmentPath(sha) != nil })
        try a.engine.setPaused(true)
        try await Task.sleep(for: .milliseconds(300))
        // While a is paused, b attaches the same file to another record, and a deletes its own.
        _ = try b.store.put(entity: "doc", id: "d2", payload: "{}", attachments: [sha])
        #expect(try await eventually { try b.store.outbox().isEmpty })
        _ = try a.store.delete(entity: "doc", id: "d1")
        try await Task.sleep(for: .milliseconds(1200))
        // The pull stays away while the resume's removal pass runs.
        log.failPulls(with: .unavailable("slow"))
        try a.engine.setPaused(false)
        a.engine.syncNow()
        try await Task.sleep(for: .milliseconds(1500))
        #expect(log.state.withLock { $0.blobs[key] != nil && $0.deletedBlobs.isEmpty })
        log.failPulls(with: nil)
        #expect(try await eventually { try a.store.get(entity: "doc", id: "d2") != nil })
        #expect(try await eventually { try a.store.blobDeletionCount(transport: "m") == 0 })
        try await Task.sleep(for: .milliseconds(1500))
        #expect(log.state.withLock { $0.blobs[key] != nil && $0.deletedBlobs.isEmpty })
    }

    /// A host that cannot be reached keeps the note: nothing is lost, the removal comes later.
    @Test func aFailedRemovalIsTriedAgain() async throws {
        let log = MemoryLog()
        let (a, b) = try await Self.pair(log, retention: .zero)
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        let (_, key) = try await Self.attach("far bytes", id: "d1", on: a, log)
        _ = try a.store.delete(entity: "doc", id: "d1")
        #expect(try await eventually { try b.store.get(entity: "doc", id: "d1")?.deleted == true })
        log.fail(with: .unavailable("down"))
        try await Task.sleep(for: .milliseconds(2500))
        #expect(log.state.withLock { $0.blobs[key] != nil })
        #expect(try a.store.blobDeletionCount(transport: "m") == 1)
        log.fail(with: nil)
        #expect(try await eventually(.seconds(15)) { log.state.withLock { $0.blobs[key] == nil } })
    }
}
