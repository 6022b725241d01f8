import FerryModel
import FerryTestSupport
import Foundation
import Testing
@testable import FerrySync

/// What the folder transport does when files disappear from the folder (a user cleared it or
/// deleted a file, and the sync tool synced the deletion). Device A writes into folder `a`; the test plays the sync tool
/// into folder `b`, where device B reads; the engine's "start over" is played by pushing every
/// batch again.
@Suite struct FolderLostFilesTests {
    let a = ScratchFolder(), b = ScratchFolder()
    var rng = SplitMix64(seed: 7)

    /// Device A's transport; one `keeper` across calls plays ferryd's store across restarts.
    func writer(_ keeper: FolderTransport.StateKeeper, maxSegments: Int = 64) -> FolderTransport {
        FolderTransport(name: "folder", path: a.path, owner: FolderFixture.owner, device: FolderFixture.writer,
                        options: FolderFixture.options(maxSegments: maxSegments), keeper: keeper)
    }

    func reader() -> FolderTransport {
        FolderTransport(name: "folder", path: b.path, owner: FolderFixture.owner, device: FolderFixture.reader,
                        options: FolderFixture.options())
    }

    mutating func batches(_ count: Int, from start: Int64 = 0) -> [[Envelope]] {
        var out: [[Envelope]] = []
        for i in 0..<count {
            var batch: [Envelope] = []
            for j in 0..<2 {
                let n = Int64(i * 2 + j)
                batch.append(FolderFixture.envelope(stream: UInt64(start + n) + 1, millis: start + n, rng: &rng))
            }
            out.append(batch)
        }
        return out
    }

    /// The seqs of the segments and snapshots in A's directory of `root`.
    func seqs(_ root: String) -> [UInt64] {
        SyncTool.files(root).compactMap { name in
            switch FolderFileName(name) {
            case .segment(let seq), .snapshot(let seq): seq
            default: nil
            }
        }
    }

    /// Plays the engine pushing `batch`: when the transport says its host lost data, the
    /// engine starts it over and pushes every record (`everything`) again. Returns the failure.
    func push(_ t: FolderTransport, _ batch: [Envelope], everything: [[Envelope]]) async throws -> TransportFailure? {
        do {
            _ = try await t.push(batch)
            return nil
        } catch {
            guard case .hostLostData = error else { throw error }
            for batch in everything {
                let outcomes = try await t.push(batch)
                #expect(outcomes.allSatisfy { $0 == .accepted || $0 == .duplicate })
            }
            return error
        }
    }

    @Test mutating func aClearedFolderIsWrittenAgainAboveEverySeqUsed() async throws {
        let keeper = FolderTransport.StateKeeper.inMemory()
        var t = writer(keeper)
        let before = batches(3)
        for batch in before { _ = try await t.push(batch) }
        try SyncTool.mirror(from: a.path, to: b.path)
        let r = reader()
        let first = try await r.drain(from: nil)
        #expect(first.envelopes == before.flatMap { $0 })

        // A user clears the synced folder; ferryd restarts meanwhile (its store remembers).
        try FileManager.default.removeItem(atPath: a.path + "/ferry-v1")
        t = writer(keeper)
        let after = batches(1, from: 100)
        let lost = try await push(t, after[0], everything: before + after)
        #expect(lost?.kind == "host-lost-data")
        #expect(lost?.message.contains("every file it wrote is gone") == true)
        #expect(await t.status().details["last-lost-files"] != nil)
        #expect(seqs(a.path).allSatisfy { $0 > 3 }, "a seq B has read was used again: \(SyncTool.files(a.path))")

        // B, which had read segments 1 to 3, gets the new writes; a device joining now gets all.
        try SyncTool.mirror(from: a.path, to: b.path)
        let second = try await r.drain(from: first.cursor)
        #expect(Set(second.envelopes) == Set((before + after).flatMap { $0 }))
        #expect(second.unreadable.isEmpty)
        let fresh = try await reader().drain(from: nil)
        #expect(Set(fresh.envelopes) == Set((before + after).flatMap { $0 }))
    }

    @Test mutating func aDeletedSegmentReachesADeviceThatWasOffline() async throws {
        let keeper = FolderTransport.StateKeeper.inMemory()
        let t = writer(keeper, maxSegments: 4)
        let before = batches(4)
        for batch in before { _ = try await t.push(batch) }
        try SyncTool.mirror(from: a.path, to: b.path)
        let online = reader()
        let seen = try await online.drain(from: nil)
        // A user deletes a segment; the sync tool deletes it everywhere.
        try FileManager.default.removeItem(atPath: FolderFixture.deviceDirectory(a.path) + "/seg-0000000000000002.fseg")
        try SyncTool.mirror(from: a.path, to: b.path)
        // The next push (which would compact) finds it gone.
        let after = batches(1, from: 100)
        let lost = try await push(t, after[0], everything: before + after)
        #expect(lost?.kind == "host-lost-data")
        #expect(lost?.message.contains("seg-0000000000000002.fseg") == true)
        try SyncTool.mirror(from: a.path, to: b.path)
        // A device that was offline all along catches up with every record.
        let offline = try await reader().drain(from: nil)
        #expect(Set(offline.envelopes) == Set((before + after).flatMap { $0 }))
        #expect(offline.unreadable.isEmpty)
        #expect(Set(try await online.drain(from: seen.cursor).envelopes).isSuperset(of: after[0]))
    }

    /// A sync tool replaces one of A's segments with a shortened copy (a transfer cut short on
    /// another device, then synced everywhere). A's files never change once written, so the
    /// rest never comes: A finds it (within `ownFilesRecheck`), starts over like for a deleted
    /// file, and a device that joins afterwards gets every record instead of waiting for good
    /// on the cut file.
    @Test mutating func aSegmentCutShortIsALossAndAJoiningDeviceGetsEverything() async throws {
        let keeper = FolderTransport.StateKeeper.inMemory()
        var options = FolderFixture.options(maxSegments: 64)
        options.ownFilesRecheck = .zero
        let t = FolderTransport(name: "folder", path: a.path, owner: FolderFixture.owner, device: FolderFixture.writer,
                                options: options, keeper: keeper)
        let before = batches(4)
        for batch in before { _ = try await t.push(batch) }
        // Still whole: no loss.
        let middle = batches(1, from: 50)
        #expect(try await t.push(middle[0]) == [.accepted, .accepted])
        let file = FolderFixture.deviceDirectory(a.path) + "/seg-0000000000000002.fseg"
        let whole = try #require(FileManager.default.contents(atPath: file))
        try whole.prefix(70).write(to: URL(fileURLWithPath: file + ".tmp-sync"))
        #expect(rename(file + ".tmp-sync", file) == 0)
        let after = batches(1, from: 100)
        let lost = try await push(t, after[0], everything: before + middle + after)
        #expect(lost?.kind == "host-lost-data")
        #expect(lost?.message.contains("seg-0000000000000002.fseg was cut short (70 of its \(whole.count) bytes are left)") == true,
                "\(lost?.message ?? "nil")")
        try SyncTool.mirror(from: a.path, to: b.path)
        let joining = try await reader().drain(from: nil)
        #expect(Set(joining.envelopes) == Set((before + middle + after).flatMap { $0 }))
    }

    /// A file that is not A's under one of A's names in A's directory (junk a user or a tool
    /// put there; a newer-looking snapshot name too): A restarted does not take it for one of its
    /// own, so no loss is made up (it had thought thousands of its segments gone and started
    /// over, and a junk snapshot name had it delete its segments below it); the name is never
    /// used by A (readers consumed it), also after the junk goes and A restarts again; readers
    /// get every record.
    @Test mutating func junkUnderTheWritersOwnNamesIsNeitherItsFileNorALoss() async throws {
        let keeper = FolderTransport.StateKeeper.inMemory()
        var t = writer(keeper)
        let before = batches(3)
        for batch in before { _ = try await t.push(batch) }
        let dir = FolderFixture.deviceDirectory(a.path)
        var junk = [UInt8](repeating: 0, count: 3000)
        for i in junk.indices { junk[i] = UInt8.random(in: 0...255, using: &rng) }
        FileManager.default.createFile(atPath: dir + "/seg-0000000000000fff.fseg", contents: Data(junk))
        FileManager.default.createFile(atPath: dir + "/snap-0000000000000800.fsnap", contents: Data(junk.prefix(500)))
        // Put there an hour ago: not a file of A's still being written in place.
        for name in ["seg-0000000000000fff.fseg", "snap-0000000000000800.fsnap"] {
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -3600)], ofItemAtPath: dir + "/" + name)
        }
        t = writer(keeper)
        let after = batches(1, from: 100)
        #expect(try await t.push(after[0]) == [.accepted, .accepted])
        // Its files go on above the junk: a snapshot there supersedes its older files and the
        // skipped seqs, so no segment is expected where none was written.
        #expect(SyncTool.files(a.path).contains(FolderFileName.snapshotName(0x1000)), "\(SyncTool.files(a.path))")
        let state = try FolderWriterState(parsing: try keeper.load(t.stateKey))
        #expect(state.taken == 0xfff && state.high > 0xfff && state.epoch == 0)
        try SyncTool.mirror(from: a.path, to: b.path)
        let read = try await reader().drain(from: nil)
        #expect(Set(read.envelopes) == Set((before + after).flatMap { $0 }))
        // The junk goes; A restarts: still no loss, and no name at or below it is used.
        try FileManager.default.removeItem(atPath: dir + "/seg-0000000000000fff.fseg")
        try FileManager.default.removeItem(atPath: dir + "/snap-0000000000000800.fsnap")
        t = writer(keeper)
        #expect(try await t.push(batches(1, from: 200)[0]) == [.accepted, .accepted])
        #expect(seqs(a.path).filter { $0 > 3 }.allSatisfy { $0 > 0xfff }, "\(SyncTool.files(a.path))")
    }

    @Test mutating func aLossIsReportedToAPullUntilTheTransportStartsOver() async throws {
        let keeper = FolderTransport.StateKeeper.inMemory()
        var t = writer(keeper)
        _ = try await t.push(batches(1)[0])
        let cursor = try await t.pull(after: nil, limit: 10, wait: .zero).cursor
        #expect(try await t.pull(after: cursor, limit: 10, wait: .zero).envelopes.isEmpty)
        // The device only reads now; its files go: the pull finds out.
        try FileManager.default.removeItem(atPath: FolderFixture.deviceDirectory(a.path))
        let lost = await #expect(throws: TransportFailure.self) { try await t.pull(after: cursor, limit: 10, wait: .zero) }
        #expect(lost?.kind == "host-lost-data")
        // ferryd stopped before the engine started over: the old cursor still says so.
        t = writer(keeper)
        let again = await #expect(throws: TransportFailure.self) { try await t.pull(after: cursor, limit: 10, wait: .zero) }
        #expect(again?.kind == "host-lost-data")
        // Started over (no cursor): reading goes on, and its cursor is good from then on.
        let fresh = try await t.pull(after: nil, limit: 10, wait: .zero)
        #expect(try await t.pull(after: fresh.cursor, limit: 10, wait: .zero).envelopes.isEmpty)
        #expect(try await t.push(batches(1, from: 50)[0]) == [.accepted, .accepted])
    }

    @Test mutating func theFirstPullRemembersTheSeqsOnDisk() async throws {
        // Written by a build that kept nothing outside the folder (an upgrade).
        _ = try await writer(.inMemory()).push(batches(1)[0])
        _ = try await writer(.inMemory()).push(batches(1, from: 10)[0])
        let keeper = FolderTransport.StateKeeper.inMemory()
        var t = writer(keeper)
        _ = try await t.pull(after: nil, limit: 10, wait: .zero)
        #expect(try keeper.load(t.stateKey).map { try FolderWriterState(parsing: $0).high } == 2)
        // Cleared before it ever pushed again: still found, and seqs 1 and 2 are not used again.
        try FileManager.default.removeItem(atPath: a.path + "/ferry-v1")
        t = writer(keeper)
        let lost = await #expect(throws: TransportFailure.self) { try await t.push(batches(1, from: 20)[0]) }
        #expect(lost?.kind == "host-lost-data")
        _ = try await t.push(batches(1, from: 30)[0])
        #expect(seqs(a.path).allSatisfy { $0 > 2 } && !seqs(a.path).isEmpty)
    }

    @Test mutating func anUnmountedFolderIsNotALoss() async throws {
        let keeper = FolderTransport.StateKeeper.inMemory()
        let t = writer(keeper)
        _ = try await t.push(batches(1)[0])
        let away = a.path + "-away"
        try FileManager.default.moveItem(atPath: a.path, toPath: away)
        let failure = await #expect(throws: TransportFailure.self) { try await t.push(batches(1, from: 10)[0]) }
        #expect(failure?.kind == "unavailable")
        await #expect(throws: TransportFailure.self) { try await t.pull(after: nil, limit: 10, wait: .zero) }
        try FileManager.default.moveItem(atPath: away, toPath: a.path)
        #expect(try await t.push(batches(1, from: 20)[0]) == [.accepted, .accepted])
        #expect(seqs(a.path) == [1, 2])
    }

    @Test func writerStateRoundTripsAndRejectsEveryCutAndExcess() throws {
        let state = FolderWriterState(high: 12, base: 9, snapshot: 9, epoch: 3)
        #expect(state.text == "{\"b\":9,\"e\":3,\"h\":12,\"s\":9,\"v\":1}")
        #expect(try FolderWriterState(parsing: state.text) == state)
        #expect(try FolderWriterState(parsing: nil) == FolderWriterState())
        let text = Array(state.text.utf8)
        for cut in 1..<text.count {
            #expect(throws: FolderCursorError.self) { try FolderWriterState(parsing: String(decoding: text[..<cut], as: UTF8.self)) }
        }
        // A taken seq (a foreign file under one of its names) comes between s and v, and only then.
        let taken = FolderWriterState(high: 12, base: 9, snapshot: 9, epoch: 3, reread: .init(after: 10, through: 12), taken: 4095)
        #expect(taken.text == "{\"b\":9,\"e\":3,\"h\":12,\"ra\":10,\"rt\":12,\"s\":9,\"t\":4095,\"v\":1}")
        #expect(try FolderWriterState(parsing: taken.text) == taken && taken.highestUsed == 4095 && state.highestUsed == 12)
        let takenText = Array(taken.text.utf8)
        for cut in 1..<takenText.count {
            #expect(throws: FolderCursorError.self) { try FolderWriterState(parsing: String(decoding: takenText[..<cut], as: UTF8.self)) }
        }
        for bad in ["{\"b\":9,\"e\":3,\"h\":12,\"s\":9,\"v\":2}", "{\"b\":13,\"e\":3,\"h\":12,\"s\":9,\"v\":1}",
                    "{\"b\":9,\"e\":3,\"h\":12,\"s\":9,\"t\":1,\"t\":2,\"v\":1}", "{\"b\":9,\"e\":3,\"h\":12,\"s\":9,\"x\":1,\"v\":1}",
                    "{\"b\":9,\"b\":9,\"h\":12,\"s\":9,\"v\":1}", "{\"b\":99999999999999999999,\"e\":3,\"h\":12,\"s\":9,\"v\":1}",
                    "{\"b\":9,\"e\":3,\"h\":12,\"s\":9,\"v\":1} ", String(repeating: " ", count: 300)] {
            #expect(throws: FolderCursorError.self) { try FolderWriterState(parsing: bad) }
        }
    }

    @Test func writerStateNamesWhatIsGone() {
        let seg = FolderFileName.segmentName, snap = FolderFileName.snapshotName
        let state = FolderWriterState(high: 12, base: 9, snapshot: 9, epoch: 0)
        #expect(state.lost(names: [snap(9), seg(10), seg(11), seg(12)]) == nil)
        #expect(state.lost(names: [snap(9), seg(10), seg(12), "seg-000000000000000b (1).fseg"])?.contains(seg(11)) == true)
        #expect(state.lost(names: [seg(10), seg(11), seg(12)])?.contains(snap(9)) == true)
        #expect(state.lost(names: [])?.contains("every file") == true)
        #expect(state.lost(names: nil)?.contains("every file") == true)
        // A newer snapshot (a newer copy of this device compacted) supersedes what it expected.
        #expect(state.lost(names: [snap(14)]) == nil)
        // Segments above what it remembers are not expected; a device that never wrote, or
        // whose only file is an empty snapshot after a loss, expects nothing.
        #expect(state.lost(names: [snap(9), seg(10), seg(11), seg(12), seg(13)]) == nil)
        #expect(FolderWriterState().lost(names: []) == nil)
        #expect(FolderWriterState(high: 5, base: 5, snapshot: 0, epoch: 1).lost(names: []) == nil)
    }

    @Test func theCursorCarriesTheEpoch() throws {
        var cursor = FolderCursor()
        #expect(cursor.text == "{\"d\":{},\"v\":1}")  // epoch 0: the text of older builds
        cursor.epoch = 3
        #expect(cursor.text == "{\"d\":{},\"v\":1,\"w\":3}")
        #expect(try FolderCursor(parsing: cursor.text) == cursor)
        #expect(try FolderCursor(parsing: "{\"d\":{},\"v\":1}").epoch == 0)
    }
}
