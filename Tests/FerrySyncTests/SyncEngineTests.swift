import FerryModel
import FerryStore
import FerryTestSupport
import Foundation
import Synchronization
import Testing
@testable import FerrySync

/// One device for the engine tests: a real store in a temporary directory and an engine whose
/// transports are `MemoryTransport`s over logs the test shares between devices.
final class EngineDevice: Sendable {
    let dir = TempDir("engine")
    let store: Store
    let engine: SyncEngine

    /// `logs` maps a transport's configured location to the shared log it uses.
    init(logs: [String: MemoryLog], backoff: (@Sendable (SyncFailure, Int) -> Duration)? = nil,
         log syncLog: SyncLog = .silent, configure: (inout SyncOptions) -> Void = { _ in },
         store configureStore: (inout StoreConfiguration) -> Void = { _ in }) throws {
        var config = StoreConfiguration(directory: dir.path + "/state")
        config.durability = .normal
        configureStore(&config)
        store = try Store(configuration: config)
        var options = SyncOptions(scratchDirectory: dir.path + "/state/tmp")
        options.pollInterval = .milliseconds(100)
        options.debounce = .milliseconds(5)
        options.attachmentWait = .seconds(5)
        if let backoff { options.backoff = backoff }
        configure(&options)
        engine = SyncEngine(store: store, options: options, log: syncLog) { info, _, _ throws(TransportFailure) in
            guard let log = logs[info.config] else { throw .rejected("no log \(info.config)") }
            return MemoryTransport(name: info.name, log: log)
        }
        let engine = self.engine
        store.setCommitObserver { commit in engine.localChange(spaces: Set(commit.records.map(\.space))) }
    }

    func add(_ name: String, log: String, space: String = Store.privateSpace) async throws {
        try await engine.addTransport(space: space, name: name, kind: "memory", config: log)
    }
}

@Suite struct SyncEngineTests {
    /// Two devices of one owner.
    static func pair(log: MemoryLog) async throws -> (EngineDevice, EngineDevice) {
        let a = try EngineDevice(logs: ["shared": log])
        let b = try EngineDevice(logs: ["shared": log])
        await a.engine.reconcile()
        try await b.engine.restoreOwner(space: Store.privateSpace, phrase: try a.engine.recoveryPhrase(space: Store.privateSpace))
        try await a.add("m", log: "shared")
        try await b.add("m", log: "shared")
        return (a, b)
    }

    /// The host goes back to an older copy of itself (a relay restored from a backup): the
    /// devices' cursors are past its end. They start over: every record is sent again, so the
    /// host holds them all, and a change made afterwards still reaches the other device.
    @Test func aHostRestoredFromAnOlderCopyGetsEverythingAgain() async throws {
        let log = MemoryLog()
        let (a, b) = try await Self.pair(log: log)
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        for i in 0..<5 { _ = try a.store.put(entity: "note", id: "N\(i)", payload: #"{"i":\#(i)}"#) }
        #expect(try await eventually { try (0..<5).allSatisfy { try b.store.get(entity: "note", id: "N\($0)") != nil } && a.store.outbox().isEmpty })
        #expect(try await eventually { try b.store.progress(key: "cursor:m") == "5" })
        // a is away while b finds the loss first and fills the host again, past a's old cursor:
        // a must still not take up from there (it would skip what b wrote).
        try a.engine.setPaused(true)
        log.restore(keepingFirst: 2)
        _ = try b.store.put(entity: "note", id: "after", payload: "{}")
        #expect(try await eventually { log.streams.count == 6 && log.count > 5 })
        try a.engine.setPaused(false)
        #expect(try await eventually { try a.store.get(entity: "note", id: "after") != nil })
        #expect(try await eventually { log.streams.count == 6 })
        #expect(try await eventually { try a.store.outbox().isEmpty && b.store.outbox().isEmpty })
        #expect(try a.store.digest() == b.store.digest())
    }

    /// A loss both loops meet (the push finds the host lost what this device wrote, and a pull
    /// on its way comes back refused for it) starts the transport over once: a second start-over
    /// would queue and write every record again for nothing.
    @Test func aLossBothLoopsMeetStartsTheTransportOverOnce() async throws {
        let log = MemoryLog()
        let lines = Mutex<[String]>([])
        let a = try EngineDevice(logs: ["shared": log], log: SyncLog { _, message, _ in lines.withLock { $0.append(message) } })
        defer { Task { await a.engine.stop() } }
        await a.engine.reconcile()
        try await a.add("m", log: "shared")
        _ = try a.store.put(entity: "note", id: "first", payload: "{}")
        #expect(try await eventually { try log.count == 1 && a.store.outbox().isEmpty })
        // A pull is on its way (held before it looks at anything) when the push meets the loss.
        log.state.withLock { $0.pullGate = true }
        #expect(try await eventually { log.state.withLock { $0.pullsWaiting } == 1 })
        log.state.withLock { $0.lossOnNextPush = "the host lost what this device wrote" }
        _ = try a.store.put(entity: "note", id: "second", payload: "{}")
        #expect(try await eventually { log.state.withLock { $0.lossMessage } != nil })
        try await Task.sleep(for: .milliseconds(200))
        log.state.withLock { $0.pullGate = false }
        #expect(try await eventually { try log.streams.count == 2 && a.store.outbox().isEmpty })
        try await Task.sleep(for: .milliseconds(500))
        let startedOver = lines.withLock { $0.filter { $0.contains("started over") } }
        #expect(startedOver.count == 1, "\(startedOver)")
    }

    /// An attachment whose file on this device was changed outside ferryd is not sealed for a
    /// transport (no device could open the blob, and each would fetch it again and again): it
    /// is set aside as missing, and the record goes without it. A bundle leaves it out too, and
    /// says so.
    @Test func aDamagedAttachmentIsSetAsideNotSpread() async throws {
        let log = MemoryLog()
        let a = try EngineDevice(logs: ["shared": log])
        defer { Task { await a.engine.stop() } }
        await a.engine.reconcile()
        let bytes = (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let sha = try a.store.putAttachment(bytes).sha256
        let other = try a.store.putAttachment(Array("gone".utf8)).sha256
        try a.engine.setPaused(true)
        try await a.add("m", log: "shared")
        _ = try a.store.put(entity: "doc", id: "1", payload: "{}", attachments: [sha])
        let path = try #require(a.store.attachmentPath(sha))
        chmod(path, 0o600)
        try Data([0x58] + bytes.dropFirst()).write(to: URL(fileURLWithPath: path))
        try a.engine.setPaused(false)
        #expect(try await eventually { try log.count == 1 && a.store.outbox().isEmpty })
        let keys = try a.engine.keyring.keys(for: Store.privateSpace)
        #expect(log.state.withLock { $0.blobs[keys.blobKey(sha256: sha)] } == nil)
        #expect(try a.store.attachment(sha)?.present == false && a.store.missingAttachments() == [sha])
        // A bundle: the damaged one (set aside above) and one whose file is gone are left out.
        _ = try a.store.put(entity: "doc", id: "2", payload: "{}", attachments: [other])
        unlink(try #require(a.store.attachmentPath(other)))
        let summary = try BundleExporter(store: a.store, keyring: a.engine.keyring).export(to: a.dir.path + "/b.ferry")
        #expect(summary.records == 2 && summary.attachments == 0 && summary.attachmentsLeftOut == 2)
        #expect(try a.store.attachment(other)?.present == false)
    }

    /// An attachment over this device's MaxAttachmentBytes is not waited for (its record is
    /// applied at once, without it) nor downloaded again and again to be refused: once, with
    /// the limit named, until the limit changes.
    @Test func anAttachmentOverTheLimitHereIsNotFetchedAgainAndAgain() async throws {
        let log = MemoryLog()
        let a = try EngineDevice(logs: ["shared": log])
        let b = try EngineDevice(logs: ["shared": log], configure: { $0.attachmentWait = .seconds(30) },
                                 store: { $0.maxAttachmentBytes = 1000 })
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        await a.engine.reconcile()
        try await b.engine.restoreOwner(space: Store.privateSpace, phrase: try a.engine.recoveryPhrase(space: Store.privateSpace))
        try await a.add("m", log: "shared")
        let sha = try a.store.putAttachment([UInt8](repeating: 9, count: 5000)).sha256
        _ = try a.store.put(entity: "doc", id: "big", payload: "{}", attachments: [sha])
        #expect(try await eventually { try a.store.outbox().isEmpty })
        try await b.add("m", log: "shared")
        // Well within the 30 s a missing blob is waited for.
        #expect(try await eventually(.seconds(10)) { try b.store.get(entity: "doc", id: "big") != nil })
        #expect(try b.store.attachment(sha)?.present == false)
        let reads = log.state.withLock { $0.blobReads }
        #expect(reads == 1)
        for _ in 0..<3 {
            try await b.engine.syncNow()
            try await Task.sleep(for: .milliseconds(300))
        }
        #expect(log.state.withLock { $0.blobReads } == reads)
        let health = try #require(b.engine.health.first)
        #expect(health.lastRefusal?.contains("MaxAttachmentBytes=1000") == true, "\(health)")
    }

    /// Ids that Unicode calls equal (precomposed and decomposed accents, the Kelvin and
    /// Ångström signs) or that are hard to handle (emoji sequences, right-to-left text, the
    /// longest id) are all distinct records, compared by their bytes: each one's puts, edits and
    /// deletes reach the other device as that record, and both stores end up the same.
    @Test func idsThatUnicodeCallsEqualSyncAsDifferentRecords() async throws {
        let (a, b) = try await Self.pair(log: MemoryLog())
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        let ids = ["caf\u{E9}", "cafe\u{301}", "\u{C5}", "A\u{30A}", "\u{212B}", "K", "\u{212A}",
                   "\u{1F469}\u{200D}\u{1F4BB}", "\u{1F469}", "\u{5D0}\u{5D1}\u{5D2}", "\u{FB2A}", "\u{5E9}\u{5C1}",
                   String(repeating: "\u{E9}", count: 128)]
        #expect(Set(ids.map { Array($0.utf8) }).count == ids.count)
        for (i, id) in ids.enumerated() { _ = try a.store.put(entity: "note", id: id, payload: #"{"n":\#(i)}"#) }
        #expect(try await eventually { try b.store.stats().records == ids.count })
        // Edit one of each equal pair on b and delete the other on a.
        _ = try b.store.put(entity: "note", id: "cafe\u{301}", payload: #"{"edited":true}"#)
        _ = try a.store.delete(entity: "note", id: "caf\u{E9}")
        _ = try b.store.put(entity: "note", id: "\u{212A}", payload: #"{"edited":true}"#)
        _ = try a.store.delete(entity: "note", id: "K")
        #expect(try await eventually { try a.store.digest() == b.store.digest() && a.store.outbox().isEmpty && b.store.outbox().isEmpty })
        for store in [a.store, b.store] {
            #expect(try store.get(entity: "note", id: "caf\u{E9}")?.deleted == true)
            #expect(try store.get(entity: "note", id: "cafe\u{301}")?.payload == #"{"edited":true}"#)
            #expect(try store.get(entity: "note", id: "K")?.deleted == true)
            #expect(try store.get(entity: "note", id: "\u{212A}")?.payload == #"{"edited":true}"#)
            #expect(try store.get(entity: "note", id: "\u{C5}")?.payload == #"{"n":2}"#)
            #expect(try store.get(entity: "note", id: "\u{212B}")?.payload == #"{"n":4}"#)
            #expect(try store.stats().records == ids.count - 2)
        }
    }

    @Test func putsEditsAndDeletesReachTheOtherDevice() async throws {
        let (a, b) = try await Self.pair(log: MemoryLog())
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        _ = try a.store.put(entity: "note", id: "n1", payload: #"{"t":"one"}"#)
        #expect(try await eventually { try b.store.get(entity: "note", id: "n1")?.payload == #"{"t":"one"}"# })
        _ = try b.store.put(entity: "note", id: "n1", payload: #"{"t":"two"}"#)
        #expect(try await eventually { try a.store.get(entity: "note", id: "n1")?.payload == #"{"t":"two"}"# })
        _ = try a.store.delete(entity: "note", id: "n1")
        #expect(try await eventually { try b.store.get(entity: "note", id: "n1")?.deleted == true })
        #expect(try await eventually { try a.store.outbox().isEmpty && b.store.outbox().isEmpty })
        #expect(try a.store.digest() == b.store.digest())
    }

    @Test func attachmentsTravelBeforeTheirRecords() async throws {
        let log = MemoryLog()
        let (a, b) = try await Self.pair(log: log)
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        let bytes = Array("attachment bytes".utf8)
        let info = try a.store.putAttachment(bytes)
        _ = try a.store.put(entity: "doc", id: "d1", payload: "{}", attachments: [info.sha256])
        #expect(try await eventually { try b.store.get(entity: "doc", id: "d1") != nil })
        #expect(try b.store.readAttachment(info.sha256) == bytes)
        // The host holds sealed blobs only, under keyed names.
        let blobs = log.state.withLock { $0.blobs }
        #expect(blobs.count == 1)
        #expect(blobs.keys.first != info.sha256)
    }

    /// A record whose attachment's blob had not arrived within the wait is applied without it;
    /// the blob that arrives later is fetched then (looked for again with backoff), and the
    /// attachment is readable.
    /// Two devices of one owner on a log that hides blobs, b waiting 300 ms for attachments and
    /// looking again every 200 ms, then less often up to `retryMax`; no transport added yet.
    static func attachmentPair(retryMax: Duration) async throws -> (a: EngineDevice, b: EngineDevice, log: MemoryLog) {
        let log = MemoryLog()
        log.state.withLock { $0.blobsHidden = true }
        let a = try EngineDevice(logs: ["shared": log])
        let b = try EngineDevice(logs: ["shared": log], configure: { options in
            options.attachmentWait = .milliseconds(300)
            options.attachmentRetry = .milliseconds(200)
            options.attachmentRetryMax = retryMax
        })
        await a.engine.reconcile()
        try await b.engine.restoreOwner(space: Store.privateSpace, phrase: try a.engine.recoveryPhrase(space: Store.privateSpace))
        return (a, b, log)
    }

    /// `attachmentPair` with a 1 s longest wait; a puts record doc/d1 with an attachment of
    /// `bytes`, which b applies without it.
    static func recordWithoutItsBlob(_ bytes: [UInt8]) async throws -> (a: EngineDevice, b: EngineDevice, log: MemoryLog, sha256: String) {
        let (a, b, log) = try await attachmentPair(retryMax: .seconds(1))
        try await a.add("m", log: "shared")
        try await b.add("m", log: "shared")
        let info = try a.store.putAttachment(bytes)
        _ = try a.store.put(entity: "doc", id: "d1", payload: "{}", attachments: [info.sha256])
        #expect(try await eventually { try b.store.get(entity: "doc", id: "d1") != nil })
        #expect(try b.store.attachment(info.sha256)?.present == false)
        return (a, b, log, info.sha256)
    }

    /// Two devices of one owner on a log that hides blobs, b waiting `wait` for attachments; a
    /// has its transport, b gets it later (`b.add`).
    static func hiddenBlobPair(wait: Duration, retry: Duration = .seconds(60)) async throws -> (a: EngineDevice, b: EngineDevice, log: MemoryLog) {
        let log = MemoryLog()
        log.state.withLock { $0.blobsHidden = true }
        let a = try EngineDevice(logs: ["shared": log])
        let b = try EngineDevice(logs: ["shared": log], configure: {
            $0.attachmentWait = wait
            $0.attachmentRetry = retry
            $0.attachmentRetryMax = .seconds(3600)
        })
        await a.engine.reconcile()
        try await b.engine.restoreOwner(space: Store.privateSpace, phrase: try a.engine.recoveryPhrase(space: Store.privateSpace))
        try await a.add("m", log: "shared")
        return (a, b, log)
    }

    /// Every blob a page misses waits the one `attachmentWait` together: five records whose
    /// blobs never come are applied after one wait (3 s), not five in a row (15 s).
    @Test func theBlobsAPageMissesWaitOnceTogether() async throws {
        let (a, b, _) = try await Self.hiddenBlobPair(wait: .seconds(3))
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        var shas: [String] = []
        for i in 0..<5 {
            let info = try a.store.putAttachment(Array("blob \(i)".utf8))
            shas.append(info.sha256)
            _ = try a.store.put(entity: "doc", id: "d\(i)", payload: "{}", attachments: [info.sha256])
        }
        #expect(try await eventually { try a.store.outbox().isEmpty })
        try await b.add("m", log: "shared")
        #expect(try await eventually(.seconds(10)) { try (0..<5).allSatisfy { try b.store.get(entity: "doc", id: "d\($0)") != nil } })
        #expect(try Set(b.store.missingAttachments()) == Set(shas))
    }

    /// An attachment of a version that cannot win is not waited for: a later version of the
    /// same record in the page (here one without it), or a newer one in the store, beats it, so
    /// the page applies at once although the blobs never come and the wait is long. A version
    /// kept as a losing one keeps its attachment, which the missing-attachments loop is told to
    /// look for, and fetches once it is there.
    @Test func anAttachmentOfASupersededVersionIsNotWaitedFor() async throws {
        let (a, b, log) = try await Self.hiddenBlobPair(wait: .seconds(600), retry: .milliseconds(200))
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        let info = try a.store.putAttachment(Array("old photo".utf8))
        _ = try a.store.put(entity: "doc", id: "d1", payload: #"{"v":1}"#, attachments: [info.sha256])
        #expect(try await eventually { try a.store.outbox().isEmpty })
        _ = try a.store.put(entity: "doc", id: "d1", payload: #"{"v":2}"#)
        let other = try a.store.putAttachment(Array("a's photo".utf8))
        _ = try a.store.put(entity: "doc", id: "d2", payload: #"{"from":"a"}"#, attachments: [other.sha256])
        #expect(try await eventually { try a.store.outbox().isEmpty })
        _ = try b.store.put(entity: "doc", id: "d2", payload: #"{"from":"b"}"#)   // newer than a's
        // The page arrives after the loop's first look (200 ms after the start), which finds
        // nothing missing and would otherwise not look again for an hour.
        log.state.withLock { $0.pullDelay = .milliseconds(600) }
        try await b.add("m", log: "shared")
        #expect(try await eventually(.seconds(10)) {
            try b.store.get(entity: "doc", id: "d1")?.version.payload == #"{"v":2}"# && !b.store.conflicts(entity: "doc", id: "d2").isEmpty
        })
        #expect(try b.store.get(entity: "doc", id: "d2")?.version.payload == #"{"from":"b"}"#)
        #expect(try b.store.missingAttachments() == [other.sha256], "kept with the losing version of d2")
        log.state.withLock { $0.blobsHidden = false }
        #expect(try await eventually(.seconds(10)) { try b.store.attachment(other.sha256)?.present == true })
    }

    /// Records whose ids are equal as Swift strings but not in bytes are two records: a later
    /// version of one in the page does not make the other's attachment one that need not be
    /// waited for. The page waits for the blob, and the record arrives with it.
    @Test func aRecordWhoseIDDiffersOnlyInBytesDoesNotSupersedeAnother() async throws {
        let (a, b, log) = try await Self.hiddenBlobPair(wait: .seconds(600))
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        let info = try a.store.putAttachment(Array("menu photo".utf8))
        _ = try a.store.put(entity: "doc", id: "caf\u{E9}", payload: "{}", attachments: [info.sha256])
        _ = try a.store.put(entity: "doc", id: "cafe\u{301}", payload: "{}")
        #expect(try await eventually { try a.store.outbox().isEmpty })
        try await b.add("m", log: "shared")
        // The blob is not there yet: the page waits (for up to ten minutes) and nothing of it is applied.
        try await Task.sleep(for: .seconds(1))
        #expect(try b.store.get(entity: "doc", id: "caf\u{E9}") == nil)
        #expect(try b.store.get(entity: "doc", id: "cafe\u{301}") == nil)
        log.state.withLock { $0.blobsHidden = false }
        #expect(try await eventually(.seconds(10)) { try b.store.get(entity: "doc", id: "caf\u{E9}") != nil })
        #expect(try b.store.attachment(info.sha256)?.present == true)
        #expect(try b.store.get(entity: "doc", id: "cafe\u{301}") != nil)
        #expect(try b.store.missingAttachments().isEmpty)
    }

    @Test func anAttachmentThatArrivesAfterTheWaitIsFetchedLater() async throws {
        let bytes = Array("late attachment bytes".utf8)
        let (a, b, log, sha) = try await Self.recordWithoutItsBlob(bytes)
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        #expect(throws: FerryError.attachmentMissing(sha256: sha)) { try b.store.readAttachment(sha) }
        // Several looks find nothing (their wait grows), then the blob shows up.
        try await Task.sleep(for: .milliseconds(800))
        #expect(try b.store.missingAttachments() == [sha])
        log.state.withLock { $0.blobsHidden = false }
        #expect(try await eventually(.seconds(10)) { try b.store.attachment(sha)?.present == true })
        #expect(try b.store.readAttachment(sha) == bytes)
        #expect(try b.store.missingAttachments().isEmpty)
    }

    /// A blob that is there but refused (a torn copy a sync tool is still writing) is waited for
    /// like one not there yet, then looked for again soon: once whole, it is stored, without a
    /// SyncNow and long before the missing-attachments loop's longest wait.
    @Test func aTornBlobIsLookedForAgainOnceWhole() async throws {
        let (a, b, log) = try await Self.attachmentPair(retryMax: .seconds(120))
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        try await b.add("m", log: "shared")
        // b's first look finds nothing missing, so its next would be the longest wait away.
        try await Task.sleep(for: .milliseconds(400))
        try await a.add("m", log: "shared")
        let bytes = [UInt8](repeating: 9, count: 50_000)
        let info = try a.store.putAttachment(bytes)
        _ = try a.store.put(entity: "doc", id: "d1", payload: "{}", attachments: [info.sha256])
        #expect(try await eventually { try log.state.withLock { !$0.blobs.isEmpty } && a.store.outbox().isEmpty })
        let whole = try #require(log.state.withLock { $0.blobs.values.first })
        let key = try #require(log.state.withLock { $0.blobs.keys.first })
        log.state.withLock { $0.blobs[key] = Array(whole.prefix(1000)); $0.blobsHidden = false }
        #expect(try await eventually { try b.store.get(entity: "doc", id: "d1") != nil })
        #expect(try b.store.attachment(info.sha256)?.present == false)
        #expect(b.engine.health.first.map { $0.refused > 0 } == true)
        log.state.withLock { $0.blobs[key] = whole }
        #expect(try await eventually(.seconds(10)) { try b.store.attachment(info.sha256)?.present == true })
        #expect(try b.store.readAttachment(info.sha256) == bytes)
    }

    /// Bytes that are here but not recorded (a crash between writing the file and recording
    /// it) are checked and recorded by the next look, without the transport.
    @Test func anAttachmentFileThatIsHereButNotRecordedIsRecorded() async throws {
        let bytes = Array("bytes written before a crash".utf8)
        let (a, b, _, sha) = try await Self.recordWithoutItsBlob(bytes)
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        // The file appears under its name without a record, as after a crash between the two.
        let source = try #require(a.store.attachmentPath(sha))
        let target = b.store.configuration.directory + "/attachments/" + sha.prefix(2)
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: source, toPath: target + "/" + sha)
        #expect(b.store.attachmentPath(sha) != nil)
        #expect(try await eventually(.seconds(10)) { try b.store.attachment(sha)?.present == true })
        #expect(try b.store.missingAttachments().isEmpty)
        #expect(try b.store.readAttachment(sha) == bytes)
    }

    @Test func anotherOwnersEnvelopesAreRefusedNeverApplied() async throws {
        let log = MemoryLog()
        let (a, b) = try await Self.pair(log: log)
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        let stranger = EnvelopeSealer(keys: OwnerKeys.generate(), device: NodeID(77))
        let forged = stranger.seal(RecordVersion(entity: "note", id: "evil", hlc: Stamp(millis: 1_800_000_000_000, counter: 0, node: NodeID(77)),
                                                 deleted: false, payload: "{}"))
        _ = try await MemoryTransport(name: "x", log: log).push([forged])
        _ = try a.store.put(entity: "note", id: "good", payload: "{}")
        #expect(try await eventually { try b.store.get(entity: "note", id: "good") != nil })
        #expect(try b.store.get(entity: "note", id: "evil") == nil)
        #expect(try await eventually { await b.engine.states().first?.health.refused ?? 0 >= 1 })
    }

    /// A backlog's pages after the first are pulled and opened while the one before them is
    /// applied: every version of a backlog of many pages arrives, and each envelope that does
    /// not open (here another owner's) is refused exactly once, whichever page held it.
    @Test func aBacklogReadAheadAppliesEveryPageAndRefusesEachBadEnvelopeOnce() async throws {
        let log = MemoryLog()
        let a = try EngineDevice(logs: ["shared": log])
        await a.engine.reconcile()
        try await a.add("m", log: "shared")
        defer { Task { await a.engine.stop() } }
        let stranger = EnvelopeSealer(keys: OwnerKeys.generate(), device: NodeID(77))
        var good = 0, forged = 0
        for round in 0..<6 {
            for i in 0..<7 {
                _ = try a.store.put(entity: "note", id: "R\(round)-\(i)", payload: #"{"i":\#(i)}"#)
                good += 1
            }
            let expected = good + forged
            #expect(try await eventually { log.count == expected })
            let evil = stranger.seal(RecordVersion(entity: "note", id: "evil\(round)", hlc: Stamp(millis: 1_800_000_000_000, counter: 0, node: NodeID(77)),
                                                   deleted: false, payload: "{}"))
            _ = try await MemoryTransport(name: "x", log: log).push([evil])
            forged += 1
        }
        // b reads the backlog four envelopes a page: eleven pages, most of them read ahead.
        let b = try EngineDevice(logs: ["shared": log], configure: { $0.batchEnvelopes = 4 })
        defer { Task { await b.engine.stop() } }
        try await b.engine.restoreOwner(space: Store.privateSpace, phrase: try a.engine.recoveryPhrase(space: Store.privateSpace))
        try await b.add("m", log: "shared")
        #expect(try await eventually { try b.store.stats().records == good })
        #expect(try await eventually { await b.engine.states().first?.health.refused == Int64(forged) })
        for round in 0..<6 { #expect(try b.store.get(entity: "note", id: "evil\(round)") == nil) }
        #expect(try b.store.digest() == a.store.digest())
        // Read to its end, nothing is counted again.
        try await Task.sleep(for: .milliseconds(300))
        #expect(await b.engine.states().first?.health.refused == Int64(forged))
    }

    @Test func failuresBackOffAndRecover() async throws {
        let log = MemoryLog()
        let (a, b) = try await Self.pair(log: log)
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        log.fail(with: .unavailable("the test cut the line"))
        _ = try a.store.put(entity: "note", id: "n1", payload: "{}")
        #expect(try await eventually { await a.engine.states().first?.health.lastErrorKind == "unavailable" })
        #expect(try a.store.outbox().count == 1)
        log.fail(with: nil)
        a.engine.syncNow()
        b.engine.syncNow()
        #expect(try await eventually { try b.store.get(entity: "note", id: "n1") != nil })
    }

    /// A push the host does not answer (a relay stopped with SIGSTOP, a network that drops
    /// packets) is what is wrong once it waited `slowPushAfter`, long before the transport
    /// gives up: the problem says so, without counting as a failure (no backoff, nothing held,
    /// no error recorded). Once the answer comes the problem is gone and the record is there.
    @Test func aPushWaitingLongForItsAnswerIsShownAsTheProblem() async throws {
        let log = MemoryLog()
        let a = try EngineDevice(logs: ["shared": log], configure: { $0.slowPushAfter = .milliseconds(200) })
        defer { Task { await a.engine.stop() } }
        try await a.add("m", log: "shared")
        log.state.withLock { $0.pushDelay = .seconds(2) }
        _ = try a.store.put(entity: "note", id: "n1", payload: "{}")
        #expect(try await eventually { a.engine.health.first?.problem?.hasPrefix("push: m has not answered a push for") == true })
        let health = try #require(a.engine.health.first)
        #expect(health.problem?.contains("still waiting: check the network and that m is up") == true, "\(health)")
        #expect(!health.isFailing && health.failure(of: "push") == nil && health.lastError == nil && health.state == "pushing")
        log.state.withLock { $0.pushDelay = .zero }
        #expect(try await eventually { log.count == 1 && a.engine.health.first?.problem == nil })
    }

    /// Pushes that keep failing stay the transport's problem while its pulls succeed: a pull's
    /// success puts right only the pull's failures. Once pushes work, the problem is gone.
    @Test func aFailingPushStaysAProblemWhilePullsSucceed() async throws {
        let log = MemoryLog()
        let (a, b) = try await Self.pair(log: log)
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        log.failPushes(with: .quotaExceeded("the test's quota is used up"))
        _ = try a.store.put(entity: "note", id: "n1", payload: "{}")
        #expect(try await eventually { a.engine.health.first?.problem?.hasPrefix("push: quota") == true })
        // Pulls go on succeeding meanwhile.
        #expect(try await eventually { a.engine.health.first?.lastSuccessAt != nil })
        let before = try #require(a.engine.health.first?.lastSuccessAt)
        #expect(try await eventually { (a.engine.health.first?.lastSuccessAt ?? 0) > before })
        let health = try #require(a.engine.health.first)
        #expect(health.problem?.hasPrefix("push: quota") == true)
        #expect(health.state == "backoff")
        #expect(health.retryAt != nil)
        log.failPushes(with: nil)
        a.engine.syncNow()
        #expect(try await eventually { try b.store.get(entity: "note", id: "n1") != nil })
        #expect(try await eventually { a.engine.health.first?.problem == nil && a.engine.health.first?.retryAt == nil })
    }

    /// A record too large for the host does not hold back the records after it: the batch the
    /// host refuses as too large is pushed in halves, the record refused on its own is rejected
    /// for that transport (shown in the outbox's errors, with the reason and what to do), and the
    /// rest arrives. A later version of that record is offered again.
    @Test func aRecordTooLargeForTheHostIsRejectedAndTheRestGoesOn() async throws {
        let log = MemoryLog()
        log.state.withLock { $0.maxPushBytes = 4096 }
        let (a, b) = try await Self.pair(log: log)
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        var requests = (0..<20).map { PutRequest(entity: "note", id: "n\($0)", payload: #"{"i":\#($0)}"#) }
        requests.insert(PutRequest(entity: "note", id: "big", payload: #"{"pad":"\#(String(repeating: "z", count: 5000))"}"#), at: 10)
        _ = try a.store.putMany(requests)
        #expect(try await eventually { try (0..<20).allSatisfy { try b.store.get(entity: "note", id: "n\($0)") != nil } })
        #expect(log.state.withLock { $0.tooLarge } >= 2)   // the whole batch, then the big record alone
        // The outcomes are recorded once the last part of the batch is answered.
        #expect(try await eventually { try !a.store.outbox(errorsOnly: true).isEmpty })
        let errors = try a.store.outbox(errorsOnly: true)
        #expect(errors.map(\.id) == ["big"])
        let refusal = try #require(errors.first?.deliveries.first { $0.transport == "m" }?.error)
        #expect(refusal.hasPrefix("too large for m: ") && refusal.contains("the limit is 4096"), "\(refusal)")
        #expect(try a.store.outbox().map(\.id) == ["big"])
        #expect(try b.store.get(entity: "note", id: "big") == nil)
        // The push loop is not failing: the refusal is the record's, not the transport's (counted
        // just after the outbox records it).
        #expect(await eventually { a.engine.health.first?.refused == 1 })
        let health = try #require(a.engine.health.first)
        #expect(health.problem == nil && health.refused == 1, "\(health)")
        #expect(health.lastRefusal?.contains("note/big") == true, "\(String(describing: health.lastRefusal))")
        // A new version of the record (one that fits) is offered again and arrives.
        _ = try a.store.put(entity: "note", id: "big", payload: #"{"pad":"small now"}"#)
        #expect(try await eventually { try b.store.get(entity: "note", id: "big")?.payload == #"{"pad":"small now"}"# })
        #expect(try await eventually { try a.store.outbox().isEmpty })
    }

    /// An attachment the host refuses as too large rejects the records that reference it, for
    /// that transport, and the rest of their batch goes on; a later version that references a
    /// blob that fits is offered again and arrives with it.
    @Test func anAttachmentTooLargeForTheHostRejectsItsRecordAndTheRestGoesOn() async throws {
        let log = MemoryLog()
        log.state.withLock { $0.maxBlobBytes = 4096 }
        let (a, b) = try await Self.pair(log: log)
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        let big = try a.store.putAttachment([UInt8](repeating: 7, count: 10_000))
        var requests = (0..<20).map { PutRequest(entity: "note", id: "n\($0)", payload: #"{"i":\#($0)}"#) }
        requests.insert(PutRequest(entity: "note", id: "photo", payload: "{}", attachments: [big.sha256]), at: 10)
        _ = try a.store.putMany(requests)
        #expect(try await eventually { try (0..<20).allSatisfy { try b.store.get(entity: "note", id: "n\($0)") != nil } })
        #expect(try await eventually { try !a.store.outbox(errorsOnly: true).isEmpty })
        let errors = try a.store.outbox(errorsOnly: true)
        #expect(errors.map(\.id) == ["photo"])
        let refusal = try #require(errors.first?.deliveries.first { $0.transport == "m" }?.error)
        #expect(refusal.hasPrefix("attachment \(big.sha256.prefix(12))… is too large for m: ") && refusal.contains("the limit is 4096"),
                "\(refusal)")
        #expect(try b.store.get(entity: "note", id: "photo") == nil)
        #expect(await eventually { a.engine.health.first?.refused == 1 })
        #expect(a.engine.health.first?.problem == nil)
        let small = try a.store.putAttachment(Array("a small photo".utf8))
        _ = try a.store.put(entity: "note", id: "photo", payload: "{}", attachments: [small.sha256])
        #expect(try await eventually { try b.store.get(entity: "note", id: "photo")?.attachments == [small.sha256] })
        #expect(try await eventually { try b.store.attachment(small.sha256)?.present == true })
        #expect(try await eventually { try a.store.outbox().isEmpty })
    }

    /// A push round with nothing to push asks the host nothing, so it is no success: a host
    /// that refuses every pull never shows a last success, however many idle rounds pass.
    @Test func anEmptyOutboxIsNoSuccess() async throws {
        let log = MemoryLog()
        log.failPulls(with: .unauthorized("the test's token is revoked"))
        let a = try EngineDevice(logs: ["shared": log])
        defer { Task { await a.engine.stop() } }
        await a.engine.reconcile()
        try await a.add("m", log: "shared")
        #expect(try await eventually { a.engine.health.first?.lastErrorKind == "unauthorized" })
        try await Task.sleep(for: .milliseconds(500))   // several poll intervals of idle push rounds
        let health = try #require(a.engine.health.first)
        #expect(health.lastSuccessAt == nil, "\(health)")
        #expect(health.problem?.hasPrefix("pull: unauthorized") == true)
    }

    /// A loop backing off because the host was unreachable starts again as soon as the other
    /// loop reaches the host: here the pull, after one failure, would otherwise wait an hour.
    @Test func aHostThatIsReachableAgainEndsTheOtherLoopsBackoff() async throws {
        let log = MemoryLog()
        let a = try EngineDevice(logs: ["shared": log])
        let b = try EngineDevice(logs: ["shared": log]) { _, _ in .seconds(3600) }
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        await a.engine.reconcile()
        try await b.engine.restoreOwner(space: Store.privateSpace, phrase: try a.engine.recoveryPhrase(space: Store.privateSpace))
        log.failPulls(with: .unavailable("the test cut the line"))
        try await a.add("m", log: "shared")
        try await b.add("m", log: "shared")
        #expect(try await eventually { await b.engine.states().first?.health.lastErrorKind == "unavailable" })
        _ = try a.store.put(entity: "note", id: "from-a", payload: "{}")
        #expect(try await eventually { log.count == 1 })
        log.failPulls(with: nil)
        // b's push reaches the host, so b's pull tries again at once and finds a's record.
        _ = try b.store.put(entity: "note", id: "from-b", payload: "{}")
        #expect(try await eventually { try b.store.get(entity: "note", id: "from-a") != nil })
        let health = try #require(await b.engine.states().first?.health)
        #expect((health.lastSuccessAt ?? 0) >= (health.lastErrorAt ?? 0))
    }

    /// A transport that takes two pushes at once gets two on their way while the outbox is long;
    /// every record arrives once and the outbox empties.
    @Test func aTransportThatTakesTwoPushesAtOnceGetsThem() async throws {
        let log = MemoryLog()
        log.state.withLock { $0.window = 2; $0.pushDelay = .milliseconds(30) }
        let (a, b) = try await Self.pair(log: log)
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        let requests = (0..<3000).map { PutRequest(entity: "note", id: "n\($0)", payload: #"{"i":\#($0)}"#) }
        _ = try a.store.putMany(requests)
        #expect(try await eventually(.seconds(60)) { try a.store.outbox().isEmpty })
        #expect(log.count == 3000)
        #expect(log.state.withLock { $0.mostPushing } == 2)
        #expect(try await eventually(.seconds(60)) { try (0..<3000).allSatisfy { try b.store.get(entity: "note", id: "n\($0)") != nil } })
    }

    /// A backlog pulled page after page (the next read while one is applied), paused and resumed
    /// part-way, again and again: every record arrives, none is skipped.
    /// A device `a` whose `count` notes (`n0`...) are in the log already, and a device `b` of
    /// the same owner that starts reading them, each pull that finds some taking `pullDelay`.
    static func backlog(_ count: Int, pullDelay: Duration, configureB: @escaping (inout SyncOptions) -> Void = { _ in })
        async throws -> (a: EngineDevice, b: EngineDevice) {
        let log = MemoryLog()
        let a = try EngineDevice(logs: ["shared": log])
        await a.engine.reconcile()
        try await a.add("m", log: "shared")
        _ = try a.store.putMany((0..<count).map { PutRequest(entity: "note", id: "n\($0)", payload: "{}") })
        #expect(try await eventually(.seconds(60)) { log.count == count })
        log.state.withLock { $0.pullDelay = pullDelay }
        let b = try EngineDevice(logs: ["shared": log], configure: configureB)
        try await b.engine.restoreOwner(space: Store.privateSpace, phrase: try a.engine.recoveryPhrase(space: Store.privateSpace))
        try await b.add("m", log: "shared")
        return (a, b)
    }

    @Test func aBacklogPausedPartWayIsPulledWhole() async throws {
        let (a, b) = try await Self.backlog(4000, pullDelay: .milliseconds(15))
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        for _ in 0..<6 {
            try await Task.sleep(for: .milliseconds(40))
            try b.engine.setPaused(true)
            try await Task.sleep(for: .milliseconds(30))
            try b.engine.setPaused(false)
        }
        #expect(try await eventually(.seconds(60)) { try (0..<4000).allSatisfy { try b.store.get(entity: "note", id: "n\($0)") != nil } })
    }

    /// While a backlog is pulled and applied the transport says `pulling`; caught up, `idle`.
    @Test func aBacklogShowsAsPullingUntilCaughtUp() async throws {
        let (a, b) = try await Self.backlog(2000, pullDelay: .milliseconds(150), configureB: { $0.batchEnvelopes = 200 })
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        #expect(await eventually(.seconds(30), poll: .milliseconds(5)) { b.engine.health.first?.state == "pulling" })
        #expect(try await eventually(.seconds(60)) { try b.store.get(entity: "note", id: "n1999") != nil })
        #expect(await eventually(.seconds(30)) { b.engine.health.first?.state == "idle" })
    }

    @Test func aPausedEngineKeepsItsOutboxAndResumes() async throws {
        let log = MemoryLog()
        let (a, b) = try await Self.pair(log: log)
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        try a.engine.setPaused(true)
        _ = try a.store.put(entity: "note", id: "n1", payload: "{}")
        try await Task.sleep(for: .milliseconds(300))
        #expect(log.count == 0)
        #expect(try a.store.outbox().count == 1)
        try a.engine.setPaused(false)
        #expect(try await eventually { try b.store.get(entity: "note", id: "n1") != nil })
    }

    /// One owner syncs through one space per device: restoring an owner another space here
    /// already has is refused (both would write the same folder files as one device).
    @Test func anOwnerCannotBeRestoredIntoASecondSpace() async throws {
        let a = try EngineDevice(logs: [:])
        defer { Task { await a.engine.stop() } }
        try a.store.createSpace(name: "dup")
        await a.engine.reconcile()
        let phrase = try a.engine.recoveryPhrase(space: Store.privateSpace)
        do {
            try await a.engine.restoreOwner(space: "dup", phrase: phrase)
            Issue.record("the restore was accepted")
        } catch {
            guard case .ownerInUse(let space, let other) = error else { Issue.record("\(error)"); return }
            #expect(space == "dup" && other == Store.privateSpace)
        }
        #expect(try a.engine.keyring.keys(for: "dup").owner != a.engine.keyring.keys(for: Store.privateSpace).owner)
    }

    @Test func spacesWithTheirOwnOwnersNeverMix() async throws {
        let privateLog = MemoryLog(), teamLog = MemoryLog()
        let a = try EngineDevice(logs: ["p": privateLog, "t": teamLog])
        defer { Task { await a.engine.stop() } }
        try a.store.createSpace(name: "team")
        await a.engine.reconcile()
        #expect(try a.engine.keyring.keys(for: "team").owner != a.engine.keyring.keys(for: Store.privateSpace).owner)
        try await a.add("p", log: "p")
        try await a.add("t", log: "t", space: "team")
        _ = try a.store.put(entity: "note", id: "mine", payload: "{}")
        _ = try a.store.put(space: "team", entity: "item", id: "shared", payload: "{}")
        #expect(await eventually { privateLog.count == 1 && teamLog.count == 1 })
        let privateOwner = try a.engine.keyring.keys(for: Store.privateSpace).owner
        #expect(privateLog.state.withLock { $0.envelopes.allSatisfy { $0.header.owner == privateOwner } })
        #expect(teamLog.state.withLock { $0.envelopes.allSatisfy { $0.header.owner != privateOwner } })
    }

    @Test func removingAndAddingATransportResyncs() async throws {
        let log = MemoryLog()
        let (a, b) = try await Self.pair(log: log)
        defer { Task { await a.engine.stop(); await b.engine.stop() } }
        _ = try a.store.put(entity: "note", id: "n1", payload: "{}")
        #expect(try await eventually { try b.store.get(entity: "note", id: "n1") != nil })
        try await b.engine.removeTransport(space: Store.privateSpace, name: "m")
        #expect(try b.store.progress(key: "cursor:m") == nil)
        _ = try a.store.put(entity: "note", id: "n2", payload: "{}")
        try await Task.sleep(for: .milliseconds(200))
        #expect(try b.store.get(entity: "note", id: "n2") == nil)
        try await b.add("m", log: "shared")   // the same log again: pulls from the start
        #expect(try await eventually { try b.store.get(entity: "note", id: "n2") != nil })
        // The cursor is saved once the page is applied, a moment after the record shows.
        #expect(try await eventually { try b.store.progress(key: "cursor:m") != nil })
    }

    @Test func exportAndImportCarryEverything() async throws {
        let a = try EngineDevice(logs: [:])
        let b = try EngineDevice(logs: [:])
        await a.engine.reconcile()
        try await b.engine.restoreOwner(space: Store.privateSpace, phrase: try a.engine.recoveryPhrase(space: Store.privateSpace))
        let info = try a.store.putAttachment(Array(repeating: 7, count: 3 << 20))
        for i in 0..<1000 { _ = try a.store.put(entity: "note", id: "n\(i)", payload: #"{"i":\#(i)}"#, attachments: i == 5 ? [info.sha256] : []) }
        _ = try a.store.delete(entity: "note", id: "n9")
        let file = a.dir.path + "/bundle.ferry"
        let written = try BundleExporter(store: a.store, keyring: a.engine.keyring).export(to: file)
        #expect(written.records == 1000)
        #expect(written.attachments == 1)
        let summary = try BundleImporter(store: b.store, keyring: b.engine.keyring, scratchDirectory: b.dir.path + "/scratch").importBundle(from: file)
        #expect(summary.applied == 1000)
        #expect(try a.store.digest() == b.store.digest())
        #expect(try b.store.readAttachment(info.sha256, maxBytes: 4 << 20).count == 3 << 20)
        // Again: nothing new.
        let again = try BundleImporter(store: b.store, keyring: b.engine.keyring, scratchDirectory: b.dir.path + "/scratch").importBundle(from: file)
        #expect(again.duplicates == 1000 && again.applied == 0)
        // A truncated bundle changes nothing.
        let data = try Data(contentsOf: URL(fileURLWithPath: file))
        let cut = a.dir.path + "/cut.ferry"
        try data.prefix(data.count - 10).write(to: URL(fileURLWithPath: cut))
        let c = try EngineDevice(logs: [:])
        await c.engine.reconcile()
        try await c.engine.restoreOwner(space: Store.privateSpace, phrase: try a.engine.recoveryPhrase(space: Store.privateSpace))
        #expect(throws: BundleError.self) {
            try BundleImporter(store: c.store, keyring: c.engine.keyring, scratchDirectory: c.dir.path + "/scratch").importBundle(from: cut)
        }
        #expect(try c.store.stats().records == 0)
        // Frames taken out whole (each frame's checksum is its own), or an end frame that says
        // other counts: damaged, and nothing changes.
        let bytes = [UInt8](data)
        var frames: [[UInt8]] = []
        var at = BundleFormat.headerSize
        while case .frame(let payload, let next) = Frame.read(bytes, at: at) {
            frames.append(Array(bytes[payload]))
            at = next
        }
        #expect(frames.count > 1002 && frames.last?.first == BundleFormat.endKind)
        func rebuilt(_ kept: [[UInt8]]) throws -> String {
            var out = Array(bytes.prefix(BundleFormat.headerSize))
            for frame in kept { Frame.append(frame, to: &out) }
            let name = a.dir.path + "/rebuilt-\(UUID().uuidString).ferry"
            try Data(out).write(to: URL(fileURLWithPath: name))
            return name
        }
        let firstEnvelope = try #require(frames.firstIndex { $0.first == BundleFormat.envelopeKind })
        var endSaysMore = frames.last!
        endSaysMore[8] &+= 1
        // A piece of the 3 MiB blob from its middle (not its last, which the counts see): the
        // blob no longer authenticates.
        let firstPiece = try #require(frames.firstIndex { $0.first == BundleFormat.blobKind && $0[81] & 1 == 0 })
        for (what, kept, expected) in [
            ("one record out", frames.enumerated().filter { $0.offset != firstEnvelope + 3 }.map(\.element), "but its end says"),
            ("the blob out", frames.filter { $0.first != BundleFormat.blobKind }, "but its end says"),
            ("an end that says one record more", frames.dropLast() + [endSaysMore], "but its end says"),
            ("a piece of the blob out", frames.enumerated().filter { $0.offset != firstPiece }.map(\.element), "does not open"),
        ] {
            let damaged = try rebuilt(kept)
            var reason = ""
            do {
                _ = try BundleImporter(store: c.store, keyring: c.engine.keyring, scratchDirectory: c.dir.path + "/scratch").importBundle(from: damaged)
            } catch {
                if case .damaged(_, let why) = error { reason = why }
            }
            #expect(reason.contains(expected), "\(what): \(reason)")
            #expect(try c.store.stats().records == 0 && c.store.attachment(info.sha256) == nil, "\(what)")
        }
        // Rebuilt whole, the same frames import.
        #expect(try BundleImporter(store: c.store, keyring: c.engine.keyring, scratchDirectory: c.dir.path + "/scratch")
            .importBundle(from: try rebuilt(frames)).applied == 1000)
        // A device with another owner skips it.
        let d = try EngineDevice(logs: [:])
        await d.engine.reconcile()
        let skipped = try BundleImporter(store: d.store, keyring: d.engine.keyring, scratchDirectory: d.dir.path + "/scratch").importBundle(from: file)
        #expect(skipped.applied == 0 && skipped.skippedOwners.count == 1)
    }
}
