import FerryClient
import FerryJSON
import FerryTestSupport
import Foundation
import Synchronization
import Testing

/// Real ferryd processes syncing through one shared directory (no sync tool: they all see the
/// same directory, as with a network file system or a tool that already delivered every file).
@Suite(.serialized) struct FolderSyncTests {
    /// `count` devices of one owner, all on folder `shared`.
    static func devices(_ count: Int, shared: String) async throws -> [SyncDevice] {
        var out: [SyncDevice] = []
        for i in 0..<count {
            let d = try SyncDevice(["a", "b", "c", "d"][i])
            try d.start()
            if let first = out.first { try await d.joinOwner(of: first) }
            try await d.addFolder(shared)
            out.append(d)
        }
        return out
    }

    /// Devices a and b of one owner on folder `shared`; b applies a record whose attachment
    /// has not come after one second (`AttachmentWaitSeconds`).
    static func pairWithShortAttachmentWait(shared: String) async throws -> (a: SyncDevice, b: SyncDevice) {
        let a = try SyncDevice("a")
        let b = try SyncDevice("b", attachmentWaitSeconds: 1)
        try a.start()
        try b.start()
        try await b.joinOwner(of: a)
        try await a.addFolder(shared)
        try await b.addFolder(shared)
        return (a, b)
    }

    static func converged(_ devices: [SyncDevice], entity: String = "note") async throws -> Bool {
        let first = try await devices[0].records(entity)
        for d in devices.dropFirst() where try await d.records(entity) != first { return false }
        return true
    }

    @Test func twoAndThreeDevicesConvergeOnCreatesEditsAndDeletes() async throws {
        let dir = TempDir("folder-shared")
        let devices = try await Self.devices(3, shared: dir.path)
        let (a, b, c) = (devices[0], devices[1], devices[2])
        for i in 0..<50 { _ = try await a.client().put(entity: "note", id: "n\(i)", payload: ["i": .int(Int64(i)), "by": "a"]) }
        #expect(try await eventually(.seconds(60)) { let nb = try await b.records().count; let nc = try await c.records().count; return nb == 50 && nc == 50 })
        for i in 0..<10 { _ = try await b.client().put(entity: "note", id: "n\(i)", payload: ["i": .int(Int64(i)), "by": "b"]) }
        for i in 10..<15 { _ = try await c.client().delete(entity: "note", id: "n\(i)") }
        #expect(try await eventually(.seconds(60)) { try await Self.converged(devices) })
        let final = try await a.records()
        #expect(final["n3"]?.payload?.contains("\"b\"") == true)
        #expect(final["n12"]?.deleted == true)
        #expect(final.values.filter(\.deleted).count == 5)
        // The host sees no plaintext: no payload text, no ids, no entity names.
        #expect(!folderContains(dir.path, "\"by\""))
        #expect(!folderContains(dir.path, "n12"))
        #expect(!folderContains(dir.path, "note"))
    }

    /// A payload comes back byte for byte as written from every method that returns it, also
    /// as a losing version (Conflicts), restored (RestoreConflict) and replayed by a Watch
    /// that resumes from before what the daemon's memory holds (after a restart): key order,
    /// spelling of numbers and integers past 64 bits kept. Before, these three parsed the
    /// stored text and wrote it again (sorted keys, 1.5, 1.8446744073709552e+19).
    @Test func losingAndReplayedPayloadsComeBackAsWritten() async throws {
        let dir = TempDir("folder-exact")
        let devices = try await Self.devices(2, shared: dir.path)
        let (a, b) = (devices[0], devices[1])
        let exotic = #"{"z": 1, "a": 1.50, "big": 18446744073709551615, "e": 1E3}"#
        for d in devices { try await d.client().setSyncPaused(true) }
        _ = try await a.client().put(entity: "note", id: "x", payloadJSON: exotic)
        try await Task.sleep(for: .milliseconds(5))
        _ = try await b.client().put(entity: "note", id: "x", payload: ["by": "b"])
        for d in devices { try await d.client().setSyncPaused(false) }
        #expect(try await eventually(.seconds(60)) { try await Self.converged(devices) })
        // A's version lost on both devices: each keeps it as it was written.
        for d in [a, b] {
            let losing = try await d.client().conflicts(entity: "note", id: "x")
            #expect(losing.count == 1 && losing.first?.record.payloadText == exotic, "\(losing)")
        }
        let hlc = try #require(try await b.client().conflicts(entity: "note", id: "x").first?.record.hlc)
        let restored = try await b.client().restoreConflict(entity: "note", id: "x", hlc: hlc)
        #expect(restored.payloadText == exotic, "\(restored)")
        #expect(try await eventually(.seconds(60)) { try await a.client().get(entity: "note", id: "x")?.payloadText == exotic })
        // A Watch from the start after a restart is served from the store, not from memory.
        a.harness.stop()
        try a.start()
        var stream = try a.client().watch(since: 0).makeAsyncIterator()
        var replayed: String?
        while let event = try await stream.next() {
            if let record = event.record, record.id == "x" { replayed = record.payloadText; break }
        }
        #expect(replayed == exotic, "\(replayed ?? "nil")")
    }

    /// Ids that Unicode calls equal but that differ in bytes (precomposed and decomposed
    /// accents, the Kelvin and Ångström signs), and ids hard to handle (emoji sequences,
    /// right-to-left text), are distinct records end to end: put through one daemon's API,
    /// carried by the folder, listed by the other daemon and announced by its Watch, each one
    /// as itself, with its own payload.
    @Test func idsThatUnicodeCallsEqualAreDistinctRecordsEndToEnd() async throws {
        let dir = TempDir("folder-unicode")
        let devices = try await Self.devices(2, shared: dir.path)
        let (a, b) = (devices[0], devices[1])
        let ids = ["caf\u{E9}", "cafe\u{301}", "\u{C5}", "A\u{30A}", "\u{212B}", "K", "\u{212A}",
                   "\u{1F469}\u{200D}\u{1F4BB}", "\u{1F469}", "\u{5D0}\u{5D1}", "\u{FB2A}", "\u{5E9}\u{5C1}"]
        let expected = Set(ids.map { Array($0.utf8) })
        #expect(expected.count == ids.count)
        let announced = Mutex(Set<[UInt8]>())
        let watchClient = try b.client()
        let watcher = Task {
            for try await event in watchClient.watch(since: 0, entities: ["uni"]) {
                if case .change(let record, _) = event { announced.withLock { _ = $0.insert(Array(record.id.utf8)) } }
            }
        }
        defer { watcher.cancel() }
        for (i, id) in ids.enumerated() { _ = try await a.client().put(entity: "uni", id: id, payload: ["n": .int(Int64(i))]) }
        #expect(try await eventually(.seconds(60)) { try await Self.listed(b, "uni").count == ids.count }, "\(b.logTail)")
        let listed = try await Self.listed(b, "uni")
        #expect(Set(listed.keys) == expected)
        for (i, id) in ids.enumerated() { #expect(listed[Array(id.utf8)] == #"{"n":\#(i)}"#, "\(id.unicodeScalars.map { String($0.value, radix: 16) })") }
        #expect(try await eventually(.seconds(30)) { announced.withLock { $0 } == expected })
    }

    /// The records of `entity` on `device`, payload text by the bytes of their ids.
    static func listed(_ device: SyncDevice, _ entity: String) async throws -> [[UInt8]: String] {
        let client = try device.client()
        var out: [[UInt8]: String] = [:]
        var after: String?
        repeat {
            let page = try await client.list(entity: entity, after: after, limit: 1000, includeDeleted: true)
            for r in page.records { out[Array(r.id.utf8)] = r.payload.map { JSONWriter.string(.object($0)) } ?? "" }
            after = page.next
        } while after != nil
        return out
    }

    /// The blob of an attachment nothing references any more leaves the folder after the
    /// devices' BlobRetentionSeconds (here 0): each device removes only its own copy, also when
    /// the delete came from another device (the version it beat is kept as a losing version,
    /// which keeps the bytes here but not the blob on the transport). Attached again on the
    /// other device, that device writes its own copy.
    @Test func theBlobOfAnAttachmentNothingReferencesLeavesTheFolder() async throws {
        let dir = TempDir("folder-blob-removal")
        func blobFiles() -> [String] { filesBelow(dir.path).filter { $0.contains("/blobs/") && !$0.contains("/.tmp") }.sorted() }
        let a = try SyncDevice("a", blobRetentionSeconds: 0)
        let b = try SyncDevice("b", blobRetentionSeconds: 0)
        try a.start()
        try b.start()
        try await b.joinOwner(of: a)
        try await a.addFolder(dir.path)
        try await b.addFolder(dir.path)
        let bytes = (0..<30_000).map { UInt8(truncatingIfNeeded: $0 &* 11) }
        let photo = try await a.client().putAttachment(data: bytes)
        _ = try await a.client().put(entity: "doc", id: "d1", payload: [:], attachments: [photo.sha256])
        #expect(try await eventually(.seconds(30)) { (try? await b.client().getAttachment(sha256: photo.sha256)) != nil })
        let written = blobFiles()
        #expect(written.count == 1, "\(written)")
        _ = try await b.client().delete(entity: "doc", id: "d1")
        #expect(try await eventually(.seconds(30)) { try await a.records("doc")["d1"]?.deleted == true })
        #expect(try await a.client().conflicts(entity: "doc", id: "d1").count == 1)
        #expect(try await eventually(.seconds(30)) { blobFiles().isEmpty }, "\(blobFiles())\n\(a.logTail)")
        // b still has the bytes (AttachmentGraceSeconds): attached again there, b writes its own
        // copy (a's is gone), and it stays.
        _ = try await b.client().put(entity: "doc", id: "d2", payload: [:], attachments: [photo.sha256])
        #expect(try await eventually(.seconds(30)) { try await a.records("doc")["d2"] != nil })
        let again = blobFiles()
        #expect(again.count == 1 && again != written, "\(again)")
        try await Task.sleep(for: .seconds(3))
        #expect(blobFiles() == again)
    }

    /// The sync tool delivers a segment before the blob its record references: b applies the
    /// record without the attachment once AttachmentWaitSeconds passed, and GetAttachment says
    /// it is missing. When the blob arrives, b fetches it (SyncNow looks at once; otherwise it
    /// looks again with backoff) and GetAttachment returns the bytes.
    @Test func anAttachmentWhoseBlobArrivesAfterTheWaitIsFetchedLater() async throws {
        let dir = TempDir("folder-late-blob")
        let held = TempDir("folder-held-blobs")
        let (a, b) = try await Self.pairWithShortAttachmentWait(shared: dir.path)
        try await b.client().setSyncPaused(true)
        let bytes = Array("a scan that travels slowly".utf8)
        let attachment = try await a.client().putAttachment(data: bytes)
        _ = try await a.client().put(entity: "doc", id: "d1", payload: ["name": "scan"], attachments: [attachment.sha256])
        #expect(try await eventually(.seconds(30)) { try await a.client().outbox().isEmpty })
        // The blob is not there yet when b reads the segment.
        let blobFiles = filesBelow(dir.path).filter { $0.contains("/blobs/") }
        #expect(blobFiles.count == 1, "\(filesBelow(dir.path))")
        for file in blobFiles { try FileManager.default.moveItem(atPath: file, toPath: held.path + "/" + (file as NSString).lastPathComponent) }
        try await b.client().setSyncPaused(false)
        #expect(try await eventually(.seconds(30)) { try await b.records("doc")["d1"] != nil }, "\(b.logTail)")
        let client = try b.client()
        do throws(FerryClientError) {
            _ = try await client.getAttachment(sha256: attachment.sha256)
            Issue.record("the attachment is there before its blob arrived")
        } catch {
            guard case .remote(let name, _, _) = error else { throw error }
            #expect(name == "io.ferry.Store.AttachmentMissing")
        }
        // The status says so, and ferryctl's what to do.
        #expect(try await b.client().status().attachmentsMissing == 1)
        let shown = try CtlRunner(socket: b.harness.socketPath).run(["status"])
        #expect(shown.stdout.contains("1 missing") && shown.stdout.contains("ferryctl sync"), "\(shown)")
        for file in blobFiles { try FileManager.default.moveItem(atPath: held.path + "/" + (file as NSString).lastPathComponent, toPath: file) }
        try await b.client().syncNow()
        #expect(try await eventually(.seconds(30)) {
            (try? await b.client().getAttachment(sha256: attachment.sha256))?.content == .inline(bytes)
        }, "\(b.logTail)")
        #expect(try await b.client().status().attachmentsMissing == 0)
    }

    /// What a sync tool may do to a blob file: cut it short, or replace it with a copy altered
    /// in place. The device that wrote it finds out at its next blob check (SyncNow here) and
    /// writes it again, so a device that refused it gets the attachment; and a damaged copy does
    /// not hide a good one another device stored. Before, the writer only checked that its file
    /// existed, and readers tried one copy: both devices were left without the attachment.
    @Test func aDamagedBlobIsWrittenAgainByItsDeviceAndAnotherCopyServesMeanwhile() async throws {
        let dir = TempDir("folder-damaged-blob")
        let aside = TempDir("folder-blob-aside")
        let (a, b) = try await Self.pairWithShortAttachmentWait(shared: dir.path)
        func blobFiles() -> [String] { filesBelow(dir.path).filter { $0.contains("/blobs/") && !$0.contains("/.tmp") }.sorted() }
        func attachment(_ device: SyncDevice, _ sha: String) async -> [UInt8]? {
            guard case .inline(let bytes)? = (try? await device.client().getAttachment(sha256: sha))?.content else { return nil }
            return bytes
        }

        // Cut short: b refuses it and applies the record without it; a writes it again.
        let first = (0..<40_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        try await b.client().setSyncPaused(true)
        let one = try await a.client().putAttachment(data: first)
        _ = try await a.client().put(entity: "doc", id: "d1", payload: [:], attachments: [one.sha256])
        #expect(try await eventually(.seconds(30)) { try await a.client().outbox().isEmpty && blobFiles().count == 1 })
        let cut = try #require(blobFiles().first)
        #expect(truncate(cut, 1000) == 0)
        try await b.client().setSyncPaused(false)
        #expect(try await eventually(.seconds(30)) { try await b.records("doc")["d1"] != nil }, "\(b.logTail)")
        #expect(await attachment(b, one.sha256) == nil)
        try await a.client().syncNow()
        #expect(try await eventually(.seconds(30)) { (try? FileManager.default.attributesOfItem(atPath: cut)[.size] as? Int) ?? 0 > 1000 })
        #expect(a.logTail.contains("were damaged"), "\(a.logTail)")
        try await b.client().syncNow()
        #expect(try await eventually(.seconds(30)) { await attachment(b, one.sha256) == first }, "\(b.logTail)")

        // Two copies, the first one read altered in place: a new device reads the other.
        let second = Array(repeating: UInt8(ascii: "s"), count: 30_000)
        let two = try await a.client().putAttachment(data: second)
        _ = try await a.client().put(entity: "doc", id: "d2", payload: [:], attachments: [two.sha256])
        #expect(try await eventually(.seconds(30)) { try await a.client().outbox().isEmpty && blobFiles().count == 2 })
        let aCopy = try #require(Set(blobFiles()).subtracting([cut]).first)
        try FileManager.default.moveItem(atPath: aCopy, toPath: aside.path + "/blob")
        _ = try await b.client().putAttachment(data: second)
        _ = try await b.client().put(entity: "doc", id: "d3", payload: [:], attachments: [two.sha256])
        #expect(try await eventually(.seconds(30)) { try await b.client().outbox().isEmpty && blobFiles().count == 2 })
        try FileManager.default.moveItem(atPath: aside.path + "/blob", toPath: aCopy)
        let copies = blobFiles().filter { $0.hasSuffix((aCopy as NSString).lastPathComponent) }
        #expect(copies.count == 2, "\(blobFiles())")
        let damaged = try #require(copies.first)
        let handle = try #require(FileHandle(forUpdatingAtPath: damaged))
        try handle.seek(toOffset: 2000)
        handle.write(Data([0xde, 0xad, 0xbe, 0xef]))
        try handle.close()
        try await a.client().setSyncPaused(true)
        try await b.client().setSyncPaused(true)
        let c = try SyncDevice("c", attachmentWaitSeconds: 1)
        try c.start()
        try await c.joinOwner(of: a)
        try await c.addFolder(dir.path)
        #expect(try await eventually(.seconds(30)) { await attachment(c, two.sha256) == second }, "\(c.logTail)")
        #expect(c.logTail.contains("refused"), "the damaged copy was read first: \(c.logTail)")

        // b is gone for good with the only copy left, damaged: a, which has the bytes, writes
        // its own again at its next check, and a new device gets the attachment.
        _ = c.harness.stop()
        _ = b.harness.stop()
        try FileManager.default.removeItem(atPath: aCopy)
        let bCopy = try #require(copies.first { $0 != aCopy })
        #expect(truncate(bCopy, 100) == 0)
        try await a.client().setSyncPaused(false)
        try await a.client().syncNow()
        #expect(try await eventually(.seconds(30)) { FileManager.default.fileExists(atPath: aCopy) }, "\(a.logTail)")
        let d = try SyncDevice("d", attachmentWaitSeconds: 1)
        try d.start()
        try await d.joinOwner(of: a)
        try await d.addFolder(dir.path)
        #expect(try await eventually(.seconds(30)) { await attachment(d, two.sha256) == second }, "\(d.logTail)")
    }

    @Test func aStaleDeviceDoesNotBringADeletedRecordBackAndCatchesUp() async throws {
        let dir = TempDir("folder-stale")
        let devices = try await Self.devices(2, shared: dir.path)
        let (a, b) = (devices[0], devices[1])
        _ = try await a.client().put(entity: "note", id: "doomed", payload: ["v": 1])
        #expect(try await eventually(.seconds(60)) { try await b.records()["doomed"] != nil })
        #expect(b.harness.stop() == 0)                      // b goes offline with the record live
        _ = try await a.client().delete(entity: "note", id: "doomed")
        for i in 0..<20 { _ = try await a.client().put(entity: "note", id: "new\(i)", payload: ["i": .int(Int64(i))]) }
        try b.start()                                         // b comes back stale
        #expect(try await eventually(.seconds(60)) { let r = try await b.records(); return r["doomed"]?.deleted == true && r.count == 21 })
        try await Task.sleep(for: .seconds(1))
        #expect(try await a.records()["doomed"]?.deleted == true)
        #expect(try await Self.converged(devices))
    }

    @Test func aKillDuringSyncLosesNothing() async throws {
        let dir = TempDir("folder-kill")
        let devices = try await Self.devices(2, shared: dir.path)
        let (a, b) = (devices[0], devices[1])
        var items: [PutItem] = []
        let total = 20_000
        for i in 0..<total { items.append(PutItem(entity: "note", id: "k\(i)", payload: ["i": .int(Int64(i)), "pad": .string(String(repeating: "x", count: 200))])) }
        for chunk in stride(from: 0, to: items.count, by: 500) {
            _ = try await a.client().putMany(Array(items[chunk..<min(chunk + 500, items.count)]))
        }
        // Kill b while it is pulling (some records applied, not all), and a while it may still
        // be pushing.
        var seen = 0
        #expect(try await eventually(.seconds(60)) { seen = try await b.client().status().records; return seen > 0 })
        #expect(seen < total, "b had everything before the kill; the test proves less than it should")
        b.harness.crash()
        a.harness.crash()
        try a.start()
        try b.start()
        #expect(try await eventually(.seconds(60)) { try await b.records().count == total })
        #expect(try await Self.converged(devices))
        #expect(try await eventually(.seconds(60)) { try await a.client().status().outbox == 0 })
    }

    @Test func aRemovedAndReAddedTransportResyncs() async throws {
        let dir = TempDir("folder-readd")
        let devices = try await Self.devices(2, shared: dir.path)
        let (a, b) = (devices[0], devices[1])
        _ = try await a.client().put(entity: "note", id: "first", payload: ["v": 1])
        #expect(try await eventually(.seconds(60)) { try await b.records()["first"] != nil })
        try await b.client().removeTransport(name: "folder")
        #expect(try await b.transport() == nil)
        _ = try await a.client().put(entity: "note", id: "second", payload: ["v": 2])
        _ = try await b.client().put(entity: "note", id: "offline", payload: ["v": 3])
        try await Task.sleep(for: .milliseconds(500))
        #expect(try await b.records()["second"] == nil)
        try await b.addFolder(dir.path)
        #expect(try await eventually(.seconds(60)) { let rb = try await b.records(); let ra = try await a.records(); return rb["second"] != nil && ra["offline"] != nil })
        #expect(try await Self.converged(devices))
    }

    /// A user clears the synced folder (the sync tool deletes the files everywhere) while b is
    /// stopped: b writes above every seq it used before (kept in its store), so a, which had
    /// read b's old segments, gets b's new writes; both find their files lost and write
    /// everything again, so a device joining afterwards gets every record.
    @Test func aClearedFolderIsWrittenAgainAndReachesEveryDevice() async throws {
        let dir = TempDir("folder-cleared")
        let devices = try await Self.devices(2, shared: dir.path)
        let (a, b) = (devices[0], devices[1])
        for i in 0..<6 {
            _ = try await a.client().put(entity: "note", id: "a\(i)", payload: ["i": .int(Int64(i))])
            _ = try await b.client().put(entity: "note", id: "b\(i)", payload: ["i": .int(Int64(i))])
            try await Task.sleep(for: .milliseconds(60))  // one segment each
        }
        #expect(try await eventually(.seconds(60)) { let ra = try await a.records().count; let rb = try await b.records().count; return ra == 12 && rb == 12 })
        let bNode = try await b.client().status().node
        #expect(b.harness.stop() == 0)
        // a, still running, may make its directory again while it is removed: retry, as a user
        // would; it is the files that matter.
        for _ in 0..<50 {
            do { try FileManager.default.removeItem(atPath: dir.path + "/ferry-v1"); break } catch {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        // b's files are gone (a, running, may already be writing its own again: it notices at once).
        #expect(!filesBelow(dir.path).contains { $0.contains("/\(bNode)/") && ($0.hasSuffix(".fseg") || $0.hasSuffix(".fsnap")) })
        try b.start()
        _ = try await b.client().put(entity: "note", id: "after", payload: ["v": 1])
        #expect(try await eventually(.seconds(60)) { try await a.records()["after"] != nil }, "\(a.logTail)\n\(b.logTail)")
        #expect(try await eventually(.seconds(60)) {
            let oa = try await a.client().status().outbox
            let ob = try await b.client().status().outbox
            return oa == 0 && ob == 0
        })
        let c = try SyncDevice("c")
        try c.start()
        try await c.joinOwner(of: a)
        try await c.addFolder(dir.path)
        #expect(try await eventually(.seconds(60)) { try await c.records().count == 13 }, "\(c.logTail)")
        #expect(try await Self.converged([a, b, c]))
        let kinds = [try await a.transport()?.lastErrorKind, try await b.transport()?.lastErrorKind]
        #expect(kinds.contains("host-lost-data"), "\(kinds)")
    }

    /// a's state directory is restored from a backup taken before it wrote r6...r10 (which
    /// reached the folder and b): a keeps its node id, reads its own files above what the
    /// backup remembers back from the folder, gets every record again, and a write it makes
    /// afterwards wins over what it wrote before the restore, on both devices.
    @Test func aStateDirectoryRestoredFromABackupGetsBackItsOwnLaterWrites() async throws {
        let dir = TempDir("folder-restore")
        let devices = try await Self.devices(2, shared: dir.path)
        let (a, b) = (devices[0], devices[1])
        for i in 1...5 { _ = try await a.client().put(entity: "note", id: "r\(i)", payload: ["v": .int(Int64(i)), "when": "before"]) }
        #expect(try await eventually(.seconds(60)) { try await b.records().count == 5 }, "\(b.logTail)")
        let node = try await a.client().status().node

        #expect(a.harness.stop() == 0)
        let backup = a.harness.root + "/backup"
        try a.backUpState(to: backup)
        try a.start()
        for i in 6...10 {
            _ = try await a.client().put(entity: "note", id: "r\(i)", payload: ["v": .int(Int64(i)), "when": "after"])
            try await Task.sleep(for: .milliseconds(30))  // several segments
        }
        _ = try await a.client().put(entity: "note", id: "r1", payload: ["v": 1, "when": "edited after"])
        #expect(try await eventually(.seconds(60)) { try await a.client().outbox(limit: 1).isEmpty }, "\(a.logTail)")
        #expect(try await eventually(.seconds(60)) { let n = try await b.records().count; let same = try await Self.converged([a, b]); return n == 10 && same },
                "\(b.logTail)")
        let beforeRestore = try await b.records()

        #expect(a.harness.stop() == 0)
        try a.restoreState(from: backup)
        try a.start()
        #expect(try await a.client().status().node == node, "restored on the same machine, a keeps its node id")
        #expect(try await eventually(.seconds(60)) { try await a.records() == beforeRestore }, "\(a.logTail)")
        #expect(try await b.records() == beforeRestore)

        // A new write after the restore wins over a's own version from before it.
        let old = try #require(beforeRestore["r7"])
        let edit = try await a.client().put(entity: "note", id: "r7", payload: ["v": 7, "when": "after restore"])
        #expect(edit.hlc > old.hlc, "\(edit.hlc) vs \(old.hlc)")
        #expect(try await eventually(.seconds(60)) { try await b.records()["r7"]?.payload?.contains("after restore") == true }, "\(b.logTail)")
        #expect(try await eventually(.seconds(60)) { try await Self.converged([a, b]) })
        let final = try await a.records()
        #expect(final.count == 10 && final["r7"]?.hlc == edit.hlc && final["r1"]?.payload?.contains("edited after") == true)
        // a wrote above every seq its copy used: nothing of b's read was overwritten, no
        // conflict copies were needed, and a device joining now gets everything.
        let c = try SyncDevice("c")
        try c.start()
        try await c.joinOwner(of: a)
        try await c.addFolder(dir.path)
        #expect(try await eventually(.seconds(60)) { try await c.records() == final }, "\(c.logTail)")
    }

    /// b syncs through two folders at once, each with a full copy: a (only on the first)
    /// and c (only on the second) reach each other through b.
    @Test func severalTransportsAtOnceEachHoldAFullCopy() async throws {
        let one = TempDir("folder-one"), two = TempDir("folder-two")
        let a = try SyncDevice("a"), b = try SyncDevice("b"), c = try SyncDevice("c")
        try a.start(); try b.start(); try c.start()
        try await b.joinOwner(of: a)
        try await c.joinOwner(of: a)
        _ = try await b.client().put(entity: "note", id: "before", payload: ["v": 0])
        try await a.addFolder(one.path, name: "one")
        try await b.addFolder(one.path, name: "one")
        try await b.addFolder(two.path, name: "two")
        try await c.addFolder(two.path, name: "two")
        _ = try await a.client().put(entity: "note", id: "from-a", payload: ["v": 1])
        _ = try await c.client().put(entity: "note", id: "from-c", payload: ["v": 2])
        #expect(try await eventually(.seconds(60)) { let same = try await Self.converged([a, b, c]); let n = try await a.records().count; return same && n == 3 },
                "\([a, b, c].map(\.logTail).joined(separator: "\n"))")
        // b's outbox empties only once both folders have everything.
        #expect(try await eventually(.seconds(60)) { try await b.client().outbox(limit: 1).isEmpty }, "\(b.logTail)")
        let pendingOne = try await b.transport("one")?.pending, pendingTwo = try await b.transport("two")?.pending
        #expect(pendingOne == 0 && pendingTwo == 0)
    }

    @Test func twoSpacesWithTheirOwnOwnersAndFoldersNeverMix() async throws {
        let privateDir = TempDir("folder-private"), teamDir = TempDir("folder-team")
        let a = try SyncDevice("a"), b = try SyncDevice("b")
        try a.start(); try b.start()
        _ = try await a.client().createSpace(name: "team")
        try await b.joinOwner(of: a)                           // b shares a's private space only
        try await a.addFolder(privateDir.path)
        try await a.addFolder(teamDir.path, name: "team-folder", space: "team")
        try await b.addFolder(privateDir.path)
        _ = try await a.client().put(entity: "note", id: "mine", payload: ["secret": "private"])
        _ = try await a.client().put(space: "team", entity: "item", id: "shared-item", payload: ["team": "yes"])
        #expect(try await eventually(.seconds(60)) { try await b.records()["mine"] != nil })
        let spaces = try await a.client().spaces()
        let privateOwner = try #require(spaces.first { $0.name == "private" }?.owner)
        let teamOwner = try #require(spaces.first { $0.name == "team" }?.owner)
        #expect(privateOwner != teamOwner)
        #expect(try await eventually(.seconds(60)) { filesBelow(teamDir.path).contains { $0.contains(teamOwner) } })
        #expect(!filesBelow(privateDir.path).contains { $0.contains(teamOwner) })
        #expect(!filesBelow(teamDir.path).contains { $0.contains(privateOwner) })
        try await Task.sleep(for: .seconds(1))
        #expect(try await b.records("item").isEmpty)
        // b has no space "team" at all.
        #expect(try await b.client().spaces().map(\.name) == ["private"])
    }

    @Test func damagedAndForeignDataIsRefusedAndAVanishedFolderIsReported() async throws {
        let dir = TempDir("folder-bad")
        let devices = try await Self.devices(2, shared: dir.path)
        let (a, b) = (devices[0], devices[1])
        _ = try await a.client().put(entity: "note", id: "good1", payload: ["v": 1])
        #expect(try await eventually(.seconds(60)) { try await b.records()["good1"] != nil })
        // A third device of another owner writes into the same folder: its data never applies.
        let stranger = try SyncDevice("x")
        try stranger.start()
        try await stranger.addFolder(dir.path)
        _ = try await stranger.client().put(entity: "note", id: "foreign", payload: ["v": 9])
        // Flip bytes in the middle of every segment a wrote so far.
        for file in filesBelow(dir.path) where file.hasSuffix(".fseg") {
            guard var data = try? Data(contentsOf: URL(fileURLWithPath: file)), data.count > 200 else { continue }
            data[data.count / 2] ^= 0xFF
            data[data.count / 2 + 1] ^= 0xFF
            try data.write(to: URL(fileURLWithPath: file))
        }
        _ = try await a.client().put(entity: "note", id: "good2", payload: ["v": 2])
        #expect(try await eventually(.seconds(60)) { try await b.records()["good2"] != nil })
        try await Task.sleep(for: .seconds(1))
        #expect(try await b.records()["foreign"] == nil)
        #expect(try await a.records()["foreign"] == nil)
        // The folder vanishes: local work goes on, and the status says what is wrong.
        let moved = dir.path + "-away"
        try FileManager.default.moveItem(atPath: dir.path, toPath: moved)
        defer { try? FileManager.default.moveItem(atPath: moved, toPath: dir.path) }
        _ = try await a.client().put(entity: "note", id: "while-away", payload: ["v": 3])
        #expect(try await a.client().get(entity: "note", id: "while-away") != nil)
        try await a.client().syncNow()
        #expect(try await eventually(.seconds(20)) {
            let t = try await a.transport()
            return t?.lastErrorKind == "unavailable" || t?.transportState == "unavailable"
        })
        #expect(a.harness.isRunning && b.harness.isRunning)
        try FileManager.default.moveItem(atPath: moved, toPath: dir.path)
        try await a.client().syncNow()
        try await b.client().syncNow()
        #expect(try await eventually(.seconds(60)) { try await b.records()["while-away"] != nil })
    }

    /// A transport's last success is kept across a restart: with its folder gone meanwhile,
    /// status still says when it last synced, not "never" (an outside check saw a device that
    /// synced a minute before a restart look as if it never had).
    @Test func aTransportsLastSuccessOutlivesARestart() async throws {
        let dir = TempDir("folder-last-success")
        let a = try SyncDevice("a")
        try a.start()
        try await a.addFolder(dir.path)
        _ = try await a.client().put(entity: "note", id: "n", payload: ["v": 1])
        #expect(try await eventually(.seconds(30)) { try await a.transport()?.lastSuccessAt != nil }, "\(a.logTail)")
        let first = try #require(try await a.transport()?.lastSuccessAt)
        // A later success within the minute (saved at the stop, not only once a minute).
        try await Task.sleep(for: .milliseconds(1100))
        _ = try await a.client().put(entity: "note", id: "m", payload: ["v": 2])
        #expect(try await eventually(.seconds(30)) { try await (a.transport()?.lastSuccessAt ?? 0) > first }, "\(a.logTail)")
        let before = try #require(try await a.transport()?.lastSuccessAt)
        a.harness.stop()
        try FileManager.default.moveItem(atPath: dir.path, toPath: dir.path + "-away")
        defer { try? FileManager.default.removeItem(atPath: dir.path + "-away") }
        try a.start()
        // The latest before the stop (one may come after `before` was read: never an older one).
        let after = try #require(try await a.transport()?.lastSuccessAt)
        #expect(after >= before, "\(after) < \(before): \(a.logTail)")
        #expect(try await a.client().status().lastSuccessAt == after)
    }
}

/// The folder seen read-only by one daemon: a read-only bind mount in a mount namespace of
/// its own (chmod would not stop root, and the tests run as root here).
@Suite(.serialized) struct ReadOnlyFolderTests {
    static var canUnshare: Bool {
        (try? runCommand("/usr/bin/unshare", ["-m", "--propagation", "private", "/bin/true"]).status) == 0
    }

    @Test(.enabled(if: canUnshare, "needs unshare -m (root or user namespaces)"))
    func aReadOnlyFolderIsReportedAndLocalWorkGoesOn() async throws {
        let dir = TempDir("folder-ro")
        let a = try SyncDevice("a"), b = try SyncDevice("b")
        try a.start()
        let script = "mount --bind \"$FERRY_RO\" \"$FERRY_RO\" && mount -o remount,bind,ro \"$FERRY_RO\" && exec \"$0\" \"$@\""
        setenv("FERRY_RO", dir.path, 1)
        try b.start(launcher: ["/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c", script])
        try await b.joinOwner(of: a)
        try await a.addFolder(dir.path)
        try await b.addFolder(dir.path)
        _ = try await a.client().put(entity: "note", id: "from-a", payload: ["v": 1])
        _ = try await b.client().put(entity: "note", id: "from-b", payload: ["v": 2])
        // b reads what a wrote, cannot write, says so, and keeps working locally.
        #expect(try await eventually(.seconds(60)) { try await b.records()["from-a"] != nil })
        #expect(try await eventually(.seconds(20)) {
            let t = try await b.transport()
            return t?.transportState == "read-only" || t?.lastErrorKind == "unavailable"
        })
        let t = try await b.transport()
        #expect((t?.transportMessage ?? t?.lastError ?? "").contains("writable"))
        // On a read-only file system (as ferryd's unit makes one outside the home) it says how to allow it.
        #expect((t?.transportMessage ?? t?.lastError ?? "").contains("ReadWritePaths=\(dir.path)"), "\(String(describing: t))")
        _ = try await b.client().put(entity: "note", id: "still-local", payload: ["v": 3])
        #expect(try await b.client().get(entity: "note", id: "still-local") != nil)
        #expect(try await b.client().status().outbox >= 2)
        #expect(try await a.records()["from-b"] == nil)
        let bNode = try await b.client().status().node
        #expect(!filesBelow(dir.path).contains { $0.contains(bNode) }, "b wrote into a folder it sees read-only")
        #expect(b.harness.isRunning)
    }
}

/// Transports declared in ferryd.conf.
@Suite(.serialized) struct DeclaredTransportTests {
    @Test func aTransportDeclaredInTheConfigRunsAndGoesWhenTheSectionGoes() async throws {
        let dir = TempDir("folder-conf")
        let base = "[Store]\nDurability=normal\n"
        let daemon = try DaemonHarness(config: base + "[Transport from-conf]\nKind=folder\nLocation=\(dir.path)\n", name: "conf-transport")
        try daemon.start()
        let client = try FerryClient(socketPath: daemon.socketPath)
        let listed = try await client.transports()
        #expect(listed.map(\.name) == ["from-conf"] && listed.first?.location == dir.path)
        _ = try await client.put(entity: "note", id: "n1", payload: ["v": 1])
        #expect(try await eventually(.seconds(60)) { try await client.outbox(limit: 1).isEmpty })
        #expect(filesBelow(dir.path).contains { $0.hasSuffix(".fseg") })
        // A transport added by hand is left alone when the file changes.
        let other = TempDir("folder-conf-other")
        _ = try await client.addTransport(name: "by-hand", kind: "folder", location: other.path)
        try base.write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        kill(daemon.process!.processIdentifier, SIGHUP)
        #expect(try await eventually(.seconds(10)) { try await client.transports().map(\.name) == ["by-hand"] })
        // A section naming the transport added by hand takes it over, and says so.
        try (base + "[Transport by-hand]\nKind=folder\nLocation=\(other.path)\n").write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        kill(daemon.process!.processIdentifier, SIGHUP)
        #expect(try await eventually(.seconds(10)) { daemon.log.contains("now declares transport by-hand of space private, which was added with ferryctl") },
                "\(daemon.log)")
        #expect(try await client.transports().map(\.name) == ["by-hand"])
        #expect(daemon.stop() == 0)
    }

    /// A declared folder that is not there (yet: a late mount, a sync tool not started) is
    /// taken and waits, unavailable, and is used once it appears, with no reload; gone again at
    /// a reload, the transport stays. A section that cannot be used as written keeps the
    /// transport it declared before as it was; a second section at the same place (through a
    /// symbolic link) is not used. Before, each of these removed the transport, and a reload
    /// after the folder came back started it over.
    @Test func aDeclaredTransportWaitsForItsFolderAndSurvivesASectionItCannotUse() async throws {
        let top = TempDir("folder-conf-late")
        let folder = top.path + "/mount"
        let base = "[Store]\nDurability=normal\n[Sync]\nPollIntervalSeconds=1\n"
        let section = "[Transport late]\nKind=folder\nLocation=\(folder)\n"
        let daemon = try DaemonHarness(config: base + section, name: "conf-late")
        try daemon.start()
        let client = try FerryClient(socketPath: daemon.socketPath)
        #expect(try await client.transports().map(\.name) == ["late"])
        #expect(daemon.log.contains("is not an existing directory (yet)"), "\(daemon.log)")
        _ = try await client.put(entity: "note", id: "n1", payload: ["v": 1])
        #expect(try await eventually(.seconds(20)) { try await client.transports().first?.problem?.contains("missing") == true })
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        #expect(try await eventually(.seconds(30)) { try await client.outbox(limit: 1).isEmpty }, "\(daemon.log)")
        #expect(filesBelow(folder).contains { $0.hasSuffix(".fseg") })
        // Gone at a reload: kept, not removed and not started over.
        try FileManager.default.moveItem(atPath: folder, toPath: top.path + "/away")
        kill(daemon.process!.processIdentifier, SIGHUP)
        try await Task.sleep(for: .seconds(1))
        #expect(try await client.transports().map(\.name) == ["late"])
        try FileManager.default.moveItem(atPath: top.path + "/away", toPath: folder)
        kill(daemon.process!.processIdentifier, SIGHUP)
        try await Task.sleep(for: .seconds(1))
        // Configured once, at the start: never removed, added again or started over.
        #expect(daemon.log.components(separatedBy: "transport late (folder) of space private configured").count == 2, "\(daemon.log)")
        #expect(!daemon.log.contains("no longer declares transport late"), "\(daemon.log)")
        // A location it cannot use: the transport keeps its previous one.
        try (base + "[Transport late]\nKind=folder\nLocation=\(folder)/ferry-v1/x\n").write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        kill(daemon.process!.processIdentifier, SIGHUP)
        #expect(try await eventually(.seconds(10)) { daemon.log.contains("keeps its previous configuration") }, "\(daemon.log)")
        #expect(try await client.transports().map(\.location) == [folder])
        // A second section at the same place, through a symbolic link: not used.
        try FileManager.default.createSymbolicLink(atPath: top.path + "/link", withDestinationPath: folder)
        try (base + section + "[Transport twin]\nKind=folder\nLocation=\(top.path)/link\n").write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        kill(daemon.process!.processIdentifier, SIGHUP)
        #expect(try await eventually(.seconds(10)) { daemon.log.contains("transport late of space private already syncs through") }, "\(daemon.log)")
        #expect(try await client.transports().map(\.name) == ["late"])
        let check = try runCommand(try Executables.path("ferryd"), ["--config", daemon.configPath, "--check-config"])
        #expect(check.status == 1 && check.output.contains("[Transport twin] would not be used: [Transport late]"), "\(check.output)")
        #expect(daemon.stop() == 0)
    }
}
