import FerryModel
import FerryTestSupport
import Foundation
import Testing
@testable import FerrySync

/// Device A writes into folder `a`; the test plays the sync tool, copying files into folder `b`
/// where device B reads them.
@Suite struct FolderTransportTests {
    let a = ScratchFolder(), b = ScratchFolder()
    var rng = SplitMix64(seed: 42)

    func writer(maxSegments: Int = 64, path: String? = nil) -> FolderTransport {
        FolderTransport(name: "folder", path: path ?? a.path, owner: FolderFixture.owner, device: FolderFixture.writer,
                        options: FolderFixture.options(maxSegments: maxSegments))
    }

    func reader(poll: Duration = .seconds(5)) -> FolderTransport {
        FolderTransport(name: "folder", path: b.path, owner: FolderFixture.owner, device: FolderFixture.reader,
                        options: FolderFixture.options(poll: poll))
    }

    mutating func envelopes(_ count: Int, streams: UInt64 = 1000, from start: Int64 = 0) -> [Envelope] {
        (0..<count).map { i in FolderFixture.envelope(stream: (UInt64(start) + UInt64(i)) % streams + 1, millis: start + Int64(i), rng: &rng) }
    }

    /// A blob's temporary file left by a copy that never finished (ferryd killed mid-write)
    /// is removed when the device next opens its directory: it sat in every device's folder.
    @Test mutating func aBlobTemporaryFileLeftBehindIsRemoved() async throws {
        let first = writer()
        #expect(try await first.push(envelopes(1)) == [.accepted])
        let blobs = a.path + "/ferry-v1/\(FolderFixture.owner)/\(FolderFixture.writer)/blobs"
        try FileManager.default.createDirectory(atPath: blobs, withIntermediateDirectories: true)
        let stale = blobs + "/.tmp-dead-" + String(repeating: "ab", count: 32)
        #expect(FileManager.default.createFile(atPath: stale, contents: Data(repeating: 1, count: 1000)))
        await first.close()
        let again = writer()
        #expect(try await again.push(envelopes(1, from: 1)) == [.accepted])
        #expect(!FileManager.default.fileExists(atPath: stale))
    }

    @Test mutating func pushDeduplicatesRejectsOtherOwnersAndReadsBack() async throws {
        let t = writer()
        let batch = envelopes(3)
        #expect(try await t.push(batch) == [.accepted, .accepted, .accepted])
        let foreign = FolderFixture.envelope(stream: 9, millis: 9, owner: ID128(high: 9, low: 9), rng: &rng)
        let again = try await t.push([batch[0], foreign, batch[0]])
        #expect(again[0] == .duplicate && again[2] == .duplicate)
        guard case .rejected(let why) = again[1] else { Issue.record("a foreign owner must be rejected"); return }
        #expect(why.contains("owner"))
        #expect(SyncTool.files(a.path) == ["seg-0000000000000001.fseg"])  // nothing new: no file
        // Reopened, it still knows what it wrote.
        #expect(try await writer().push([batch[1]]) == [.duplicate])

        try SyncTool.mirror(from: a.path, to: b.path)
        let r = reader()
        let got = try await r.drain(from: nil)
        #expect(got.envelopes == batch && got.unreadable.isEmpty)
        let empty = try await r.pull(after: got.cursor, limit: 10, wait: .zero)
        #expect(empty.envelopes.isEmpty && !empty.more && empty.cursor == got.cursor)
    }

    /// Whether the device wrote a version before is read from its files by stream and stamp:
    /// the same version again is a duplicate, and an older version of a stream it wrote newer
    /// is taken and not written (the newer one wins on every reader), in one batch or across
    /// pushes, reopens and compactions.
    @Test mutating func anOlderVersionOfAStreamWrittenNewerIsTakenAndNotWritten() async throws {
        let t = writer()
        let old = FolderFixture.envelope(stream: 5, millis: 10, rng: &rng)
        let new = FolderFixture.envelope(stream: 5, millis: 20, rng: &rng)
        #expect(try await t.push([new]) == [.accepted])
        #expect(try await t.push([old, new]) == [.accepted, .duplicate])
        #expect(SyncTool.files(a.path) == ["seg-0000000000000001.fseg"])  // nothing new: no file
        #expect(try await writer().push([old, new]) == [.accepted, .duplicate])  // reopened
        // In one batch: the newer first, then the older, then the newer again.
        let newer = FolderFixture.envelope(stream: 6, millis: 30, rng: &rng)
        let older = FolderFixture.envelope(stream: 6, millis: 25, rng: &rng)
        #expect(try await t.push([newer, older, newer]) == [.accepted, .accepted, .duplicate])
        // Compacted into a snapshot, read by a transport opened after: the same answers.
        let c = writer(maxSegments: 2)
        let newest = FolderFixture.envelope(stream: 7, millis: 50, rng: &rng)
        #expect(try await c.push([newest]) == [.accepted])  // a third segment: compacted
        #expect(SyncTool.files(a.path) == ["snap-0000000000000003.fsnap"])
        #expect(try await writer().push([old, new, older, newer, FolderFixture.envelope(stream: 7, millis: 40, rng: &rng), newest])
                == [.accepted, .duplicate, .accepted, .duplicate, .accepted, .duplicate])
        #expect(SyncTool.files(a.path) == ["snap-0000000000000003.fsnap"])

        try SyncTool.mirror(from: a.path, to: b.path)
        let got = try await reader().drain(from: nil)
        #expect(got.envelopes.map(\.header.event).sorted() == [new, newer, newest].map(\.header.event).sorted())
    }

    /// Random pushes of new streams, newer, equal and older versions and repeats, with the
    /// writer reopened now and then and compacting every few segments: each outcome is what
    /// the device's newest version per stream says, the folder holds no version it did not
    /// write, and a reader of the whole folder ends with the newest version of every stream.
    @Test mutating func randomPushesKeepTheNewestVersionOfEveryStream() async throws {
        var pick = SplitMix64(seed: 11)
        var t = writer(maxSegments: 3)
        var newest: [StreamID: Envelope] = [:]
        var written: Set<EventID> = []
        for round in 0..<30 {
            if Int.random(in: 0..<5, using: &pick) == 0 { t = writer(maxSegments: 3) }
            var batch: [Envelope] = []
            for _ in 0..<Int.random(in: 1...12, using: &pick) {
                let stream = UInt64.random(in: 1...10, using: &pick)
                batch.append(FolderFixture.envelope(stream: stream, millis: Int64.random(in: 0...40, using: &pick), rng: &rng))
                if Bool.random(using: &pick) { batch.append(batch.randomElement(using: &pick)!) }
            }
            var expected: [PushOutcome] = []
            for e in batch {
                if let kept = newest[e.header.stream], kept.header.stamp >= e.header.stamp {
                    expected.append(kept.header.stamp == e.header.stamp ? .duplicate : .accepted)
                } else {
                    newest[e.header.stream] = e
                    written.insert(e.header.event)
                    expected.append(.accepted)
                }
            }
            #expect(try await t.push(batch) == expected, "round \(round)")
        }
        try SyncTool.mirror(from: a.path, to: b.path)
        let got = try await reader().drain(from: nil)
        #expect(got.unreadable.isEmpty)
        #expect(got.envelopes.allSatisfy { written.contains($0.header.event) })
        var read: [StreamID: Envelope] = [:]
        for e in got.envelopes where read[e.header.stream].map({ $0.header.stamp < e.header.stamp }) ?? true { read[e.header.stream] = e }
        #expect(read == newest)
    }

    /// An envelope over the limit every device reads is that record's own rejection, with what
    /// to do; the envelopes around it are stored (as the engine expects of every transport).
    @Test mutating func anEnvelopeTooLargeIsRejectedAloneAndTheRestIsStored() async throws {
        let t = writer()
        var batch = envelopes(2)
        batch.insert(Envelope(header: batch[0].header, body: [UInt8](repeating: 1, count: Envelope.maxBodyBytes + 1)), at: 1)
        batch[1].header.event = ID128(high: 7, low: 7)
        let outcomes = try await t.push(batch)
        #expect(outcomes[0] == .accepted && outcomes[2] == .accepted, "\(outcomes)")
        guard case .rejected(let why) = outcomes[1] else { Issue.record("an envelope too large must be rejected"); return }
        #expect(why.hasPrefix("too large for folder: ") && why.contains("make the record smaller"), "\(why)")
    }

    @Test mutating func pagesStopAtTheLimitInsideASegment() async throws {
        let batch = envelopes(10)
        _ = try await writer().push(batch)
        try SyncTool.mirror(from: a.path, to: b.path)
        var cursor: String?
        var seen: [Envelope] = []
        while true {
            let page = try await reader().pull(after: cursor, limit: 3, wait: .zero)
            seen += page.envelopes
            cursor = page.cursor
            if !page.more { break }
            #expect(page.envelopes.count == 3)
        }
        #expect(seen == batch)
    }

    @Test mutating func readsLateAndOutOfOrderSegments() async throws {
        let t = writer()
        let batches = [envelopes(2, from: 0), envelopes(2, from: 10), envelopes(2, from: 20)]
        for batch in batches { _ = try await t.push(batch) }
        let names = SyncTool.files(a.path)
        #expect(names.count == 3)
        let r = reader()
        try SyncTool.copy(names[2], from: a.path, to: b.path)
        var got = try await r.drain(from: nil)
        #expect(got.envelopes == batches[2])
        try SyncTool.copy(names[0], from: a.path, to: b.path)
        got = try await r.drain(from: got.cursor)
        #expect(got.envelopes == batches[0])
        try SyncTool.copy(names[1], from: a.path, to: b.path)
        got = try await r.drain(from: got.cursor)
        #expect(got.envelopes == batches[1])
        #expect(try await r.drain(from: got.cursor).envelopes.isEmpty)
    }

    @Test mutating func readsATornSegmentWhenTheRestArrives() async throws {
        let batch = envelopes(5)
        _ = try await writer().push(batch)
        let name = SyncTool.files(a.path)[0]
        let size = try Data(contentsOf: URL(fileURLWithPath: FolderFixture.deviceDirectory(a.path) + "/" + name)).count
        let r = reader()
        for cut in [10, size / 2] {  // inside the file header, then inside a frame
            try SyncTool.copy(name, from: a.path, to: b.path, prefix: cut)
            let first = try await r.drain(from: nil)
            #expect(first.unreadable.isEmpty)
            #expect(first.envelopes == Array(batch.prefix(first.envelopes.count)))
            if cut > 10 { #expect(!first.envelopes.isEmpty && first.envelopes.count < 5) }
            try SyncTool.copy(name, from: a.path, to: b.path)
            let rest = try await r.drain(from: first.cursor)
            #expect(first.envelopes + rest.envelopes == batch)
            try FileManager.default.removeItem(atPath: FolderFixture.deviceDirectory(b.path) + "/" + name)
        }
    }

    @Test mutating func readsConflictCopiesAndSkipsTemporaryFiles() async throws {
        let mine = envelopes(2)
        _ = try await writer().push(mine)
        // A clone of device A (restored from a backup) wrote its own segment 1 elsewhere; the sync
        // tool kept both versions.
        let clone = ScratchFolder()
        let other = envelopes(2, from: 100)
        _ = try await writer(path: clone.path).push(other)
        try SyncTool.mirror(from: a.path, to: b.path)
        let seg = "seg-0000000000000001.fseg"
        try SyncTool.copy(seg, from: clone.path, to: b.path, as: seg + ".sync-conflict-20260101-120000-ABCDEFG")
        try SyncTool.copy(seg, from: clone.path, to: b.path, as: "seg-0000000000000001 (1).fseg")
        try SyncTool.copy(seg, from: clone.path, to: b.path, as: ".syncthing.\(seg).tmp")
        let got = try await reader().drain(from: nil)
        #expect(got.envelopes.count == 6)  // the segment and both copies; the temporary file is skipped
        #expect(Set(got.envelopes) == Set(mine + other))
        #expect(try await reader().drain(from: got.cursor).envelopes.isEmpty)
    }

    /// A clone of this device (its state directory copied to another machine) writes files of
    /// the same names into the same directory; the sync tool keeps the clone's as conflict
    /// copies in this device's own directory. This device reads them (it never wrote what is
    /// in them), once, and still none of its own segments.
    @Test mutating func readsConflictCopiesInItsOwnDirectory() async throws {
        let mine = envelopes(2)
        let t = writer()
        _ = try await t.push(mine)
        #expect(try await t.drain(from: nil).envelopes.isEmpty, "its own segments are its store's already")
        let clone = ScratchFolder()
        let theirs = envelopes(3, from: 100)
        _ = try await writer(path: clone.path).push(theirs)
        let seg = "seg-0000000000000001.fseg"
        try SyncTool.copy(seg, from: clone.path, to: a.path, as: seg + ".sync-conflict-20261130-004100-ABCDEFG")
        let got = try await t.drain(from: nil)
        #expect(got.envelopes == theirs)
        #expect(got.unreadable.isEmpty)
        #expect(try await t.drain(from: got.cursor).envelopes.isEmpty)
        // Its own writes go on as before, and are not read back.
        #expect(try await t.push(envelopes(1, from: 200)) == [.accepted])
        #expect(try await t.drain(from: got.cursor).envelopes.isEmpty)
    }

    @Test mutating func reportsCorruptFramesAndReadsTheOthers() async throws {
        let batch = envelopes(3)
        _ = try await writer().push(batch)
        try SyncTool.mirror(from: a.path, to: b.path)
        let path = FolderFixture.deviceDirectory(b.path) + "/seg-0000000000000001.fseg"
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let frame = Frame.headerSize + batch[0].encoded.count
        bytes[FolderFileHeader.encodedSize + frame + 40] ^= 0xFF  // inside the second frame
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let now = TestClock(millis: 1_000_000)
        var options = FolderFixture.options()
        options.wallClock = { now.millis }
        let r = FolderTransport(name: "folder", path: b.path, owner: FolderFixture.owner, device: FolderFixture.reader, options: options)
        let got = try await r.drain(from: nil)
        #expect(got.envelopes == [batch[0], batch[2]])
        #expect(got.unreadable.count == 1 && got.unreadable[0].contains("seg-0000000000000001.fseg"))
        let status = await r.status()
        #expect(status.state == "corrupt-frames" && status.details["corrupt-frames"] == "1")
        #expect(status.details["last-corrupt-frame-ms"] == "1000000")
        #expect(try await r.drain(from: got.cursor).unreadable.isEmpty)  // reported once
        // What is wrong now, not since the start: an hour later the state is ok again; the
        // figures stay.
        now.millis += 3_600_000
        let later = await r.status()
        #expect(later.state == "ok" && later.details["corrupt-frames"] == "1" && later.details["last-corrupt-frame-ms"] == "1000000")
    }

    /// A FIFO, a directory or a socket under a segment's or a blob's name (a sync tool carries
    /// empty directories and symlinks; a user can make anything) is reported once and skipped,
    /// and nothing waits on it: opening a FIFO for reading would wait for a writer for ever.
    @Test mutating func somethingOtherThanAFileUnderAFilesNameIsReportedAndSkipped() async throws {
        let t = writer()
        let first = envelopes(2), second = envelopes(2, from: 100)
        _ = try await t.push(first)
        try SyncTool.mirror(from: a.path, to: b.path)
        let dir = FolderFixture.deviceDirectory(b.path)
        #expect(mkfifo(dir + "/seg-0000000000000002.fseg", 0o644) == 0)
        try FileManager.default.createDirectory(atPath: dir + "/seg-00000000000fffff.fseg", withIntermediateDirectories: false)
        let r = reader()
        let got = try await r.drain(from: nil)
        #expect(got.envelopes == first)
        #expect(got.unreadable.count == 2 && got.unreadable.allSatisfy { $0.contains("not a regular file") }, "\(got.unreadable)")
        #expect(await r.status().state == "corrupt-frames")
        // The writer's next segment is read once it is a real file; the odd names are not
        // reported again.
        try FileManager.default.removeItem(atPath: dir + "/seg-0000000000000002.fseg")
        _ = try await t.push(second)
        try SyncTool.mirror(from: a.path, to: b.path)
        let more = try await r.drain(from: got.cursor)
        #expect(more.envelopes == second && more.unreadable.isEmpty, "\(more.unreadable)")
        // A FIFO under a blob's name is no blob: not found, and nothing waits.
        let key = String(repeating: "0e", count: 32)
        try FileManager.default.createDirectory(atPath: dir + "/blobs", withIntermediateDirectories: true)
        #expect(mkfifo(dir + "/blobs/" + key, 0o644) == 0)
        #expect(try await !r.hasBlob(key: key))
        #expect(try await !r.getBlob(key: key, to: b.path + "/fetched"))
    }

    /// Odd entries in the writer's own directory (a directory under the next segment's name and
    /// under a temporary file's name, as a sync tool may carry them) neither stop its writes nor
    /// get removed or read: the next file goes above the taken name, as a snapshot that
    /// supersedes the skipped seq (so no segment is expected there).
    @Test mutating func oddEntriesInTheOwnDirectoryDoNotStopTheWriter() async throws {
        let first = envelopes(1, from: 10), second = envelopes(1, from: 20)
        _ = try await writer().push(first)
        let dir = FolderFixture.deviceDirectory(a.path)
        try FileManager.default.createDirectory(atPath: dir + "/seg-0000000000000002.fseg", withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: dir + "/.tmp-odd", withIntermediateDirectories: false)
        let t = writer()   // reads its directory afresh
        #expect(try await t.push(second) == [.accepted])
        #expect(SyncTool.files(a.path).contains("snap-0000000000000003.fsnap"), "\(SyncTool.files(a.path))")
        #expect(FileManager.default.fileExists(atPath: dir + "/.tmp-odd"))
        #expect(await t.status().state == "ok")
        // (This test's sync tool copies files only.)
        try FileManager.default.removeItem(atPath: dir + "/seg-0000000000000002.fseg")
        try FileManager.default.removeItem(atPath: dir + "/.tmp-odd")
        try SyncTool.mirror(from: a.path, to: b.path)
        let got = try await reader().drain(from: nil)
        #expect(Set(got.envelopes.map(\.header.event)) == Set((first + second).map(\.header.event)))
    }

    /// Two installations writing as one device (a cloned machine) into one directory: neither
    /// ever writes over a segment the other wrote (a sync tool would carry the replacement to
    /// every device in place of its data), every device reads what both wrote, and the one that
    /// found its segment name taken says so.
    @Test mutating func aCopyOfThisDeviceNeverHasItsSegmentsWrittenOver() async throws {
        let original = writer(), copy = writer()
        let x = envelopes(1, from: 10), y = envelopes(1, from: 20), z = envelopes(1, from: 30)
        #expect(try await copy.push(x) == [.accepted])       // segment 1; the copy knows of 1
        #expect(try await original.push(y) == [.accepted])   // reads the directory: segment 2
        #expect(await copy.status().state == "ok")
        #expect(try await copy.push(z) == [.accepted])       // 2 is taken: segment 3
        #expect(SyncTool.files(a.path) == ["seg-0000000000000001.fseg", "seg-0000000000000002.fseg", "seg-0000000000000003.fseg"])
        let status = await copy.status()
        #expect(status.state == "duplicate-device" && status.message?.contains("segment 2") == true, "\(status)")
        #expect(await original.status().state == "ok")
        try SyncTool.mirror(from: a.path, to: b.path)
        let got = try await reader().drain(from: nil)
        #expect(Set(got.envelopes.map(\.header.event)) == Set((x + y + z).map(\.header.event)))
    }

    /// A file that stays shorter than its header says holds its last records back: waited for,
    /// and after ten minutes status says which file and since when; once whole, all is read.
    @Test mutating func aFileThatStaysIncompleteIsToldAfterTenMinutes() async throws {
        let batch = envelopes(4)
        _ = try await writer().push(batch)
        try SyncTool.mirror(from: a.path, to: b.path)
        let path = FolderFixture.deviceDirectory(b.path) + "/seg-0000000000000001.fseg"
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        let twoFrames = FolderFileHeader.encodedSize + 2 * (Frame.headerSize + batch[0].encoded.count)
        try whole.prefix(twoFrames + 10).write(to: URL(fileURLWithPath: path))
        let now = TestClock(millis: 5_000_000)
        var options = FolderFixture.options()
        options.wallClock = { now.millis }
        let r = FolderTransport(name: "folder", path: b.path, owner: FolderFixture.owner, device: FolderFixture.reader, options: options)
        let got = try await r.drain(from: nil)
        #expect(got.envelopes == Array(batch.prefix(2)) && got.unreadable.isEmpty)
        #expect(await r.status().state == "ok")
        now.millis += 9 * 60_000
        _ = try await r.drain(from: got.cursor)
        #expect(await r.status().state == "ok")
        now.millis += 60_000
        let late = await r.status()
        #expect(late.state == "incomplete-files" && late.details["incomplete-files"] == "1", "\(late)")
        #expect(late.message?.contains("seg-0000000000000001.fseg") == true && late.message?.contains("10 min") == true, "\(late)")
        try whole.write(to: URL(fileURLWithPath: path))
        let rest = try await r.drain(from: got.cursor)
        #expect(rest.envelopes == Array(batch.suffix(2)))
        #expect(await r.status().state == "ok")
    }

    @Test mutating func aDeletedSegmentIsSkippedAndItsSnapshotRead() async throws {
        let t = writer(maxSegments: 3)
        let batches = (0..<3).map { i in envelopes(2, from: Int64(i) * 10) }
        for batch in batches { _ = try await t.push(batch) }
        try SyncTool.mirror(from: a.path, to: b.path)
        try FileManager.default.removeItem(atPath: FolderFixture.deviceDirectory(b.path) + "/seg-0000000000000002.fseg")
        let r = reader()
        let first = try await r.drain(from: nil)
        #expect(first.envelopes == batches[0] + batches[2])
        // The fourth push compacts: the snapshot supersedes segment 2 too.
        let last = envelopes(2, from: 30)
        _ = try await t.push(last)
        #expect(SyncTool.files(a.path) == ["snap-0000000000000004.fsnap"])
        try SyncTool.mirror(from: a.path, to: b.path)
        let second = try await r.drain(from: first.cursor)
        #expect(Set(batches[1] + last).isSubset(of: Set(second.envelopes)))
    }

    @Test mutating func aSnapshotReplacingHalfReadSegmentsLosesNothing() async throws {
        let t = writer(maxSegments: 4)
        var written: [Envelope] = []
        for i in 0..<4 {
            var batch: [Envelope] = []
            for k in 0..<5 {
                batch.append(FolderFixture.envelope(stream: UInt64(k + 1), millis: Int64(i * 10 + k), rng: &rng))
            }
            written += batch
            _ = try await t.push(batch)
        }
        try SyncTool.mirror(from: a.path, to: b.path)
        let r = reader()
        let page = try await r.pull(after: nil, limit: 7, wait: .zero)  // stops inside segment 2
        #expect(page.more && page.envelopes == Array(written.prefix(7)))
        var last: [Envelope] = []
        for k in 0..<5 {
            last.append(FolderFixture.envelope(stream: UInt64(k + 1), millis: Int64(40 + k), deleted: k == 0, rng: &rng))
        }
        _ = try await t.push(last)
        #expect(SyncTool.files(a.path) == ["snap-0000000000000005.fsnap"])
        try SyncTool.mirror(from: a.path, to: b.path)
        let rest = try await r.drain(from: page.cursor)
        #expect(Set(last).isSubset(of: Set(rest.envelopes)))  // the newest of every stream, tombstone included
        #expect(rest.unreadable.isEmpty)
        #expect(try await r.drain(from: rest.cursor).envelopes.isEmpty)
    }

    @Test mutating func compactionKeepsTheFolderNearItsLiveData() async throws {
        let t = writer(maxSegments: 8)
        var latest: [UInt64: Envelope] = [:]
        for i in 0..<120 {
            let e = FolderFixture.envelope(stream: UInt64(i % 5 + 1), millis: Int64(i), bodyBytes: 200, rng: &rng)
            latest[e.header.stream.low] = e
            #expect(try await t.push([e]) == [.accepted])
        }
        let perEnvelope = Frame.headerSize + latest[1]!.encoded.count
        let live = 5 * perEnvelope
        // At most one snapshot of the five live records and nine segments of one envelope each.
        let bound: Int = live + 9 * (perEnvelope + FolderFileHeader.encodedSize) + FolderFileHeader.encodedSize
        let size: Int = SyncTool.bytes(a.path)
        #expect(size <= bound)
        #expect(size < 120 * perEnvelope / 5)  // far below the 120 versions written
        try SyncTool.mirror(from: a.path, to: b.path)
        let got = try await reader().drain(from: nil)
        var newest: [UInt64: Envelope] = [:]
        for e in got.envelopes where newest[e.header.stream.low].map({ $0.header.stamp < e.header.stamp }) ?? true { newest[e.header.stream.low] = e }
        #expect(newest == latest)
        #expect(got.envelopes.count < 20)
        let status = await t.status()
        #expect(Int(status.details["compactions"] ?? "0")! > 0)
    }

    @Test mutating func aVanishedFolderIsUnavailableAndNeverCreated() async throws {
        let gone = a.path + "/mnt"
        try FileManager.default.createDirectory(atPath: gone, withIntermediateDirectories: false)
        let t = writer(path: gone)
        let batch = envelopes(2)
        _ = try await t.push(batch)
        try FileManager.default.moveItem(atPath: gone, toPath: a.path + "/away")  // unmounted
        let failure = await #expect(throws: TransportFailure.self) { try await t.push(envelopes(1, from: 50)) }
        guard case .unavailable(let message) = failure else { Issue.record("want .unavailable"); return }
        #expect(message.contains(gone) && message.contains("No such file or directory") && message.contains("check that it is mounted"))
        await #expect(throws: TransportFailure.self) { try await t.pull(after: nil, limit: 10, wait: .zero) }
        #expect(await t.status().state == "unavailable")
        #expect(!FileManager.default.fileExists(atPath: gone))
        // It comes back with its files (mounted again): nothing was lost.
        try FileManager.default.moveItem(atPath: a.path + "/away", toPath: gone)
        #expect(try await t.push(envelopes(1, from: 60)) == [.accepted])
        #expect(await t.status().state == "ok")
        // It comes back empty (another disk, or the sync tool deleted what was in it): the
        // files this device wrote are lost, which the engine is told so it writes everything
        // again; then the transport goes on there.
        try FileManager.default.removeItem(atPath: gone)
        try FileManager.default.createDirectory(atPath: gone, withIntermediateDirectories: false)
        let lost = await #expect(throws: TransportFailure.self) { try await t.push(batch) }
        #expect(lost?.kind == "host-lost-data")
        #expect(try await t.push(batch) == [.accepted, .accepted])
        #expect(await t.status().state == "ok")
    }

    @Test mutating func aFolderThatCannotBeWrittenIsReported() async throws {
        let t = writer()
        if geteuid() != 0 {
            // Root ignores permission bits, so this part only runs as another user.
            chmod(a.path, 0o555)
            let failure = await #expect(throws: TransportFailure.self) { try await t.push(envelopes(1)) }
            #expect(failure?.message.contains("not writable") == true)
            #expect(await t.status().state == "read-only")
            chmod(a.path, 0o755)
        }
        // Unwritable for root too: the folder was replaced by a file.
        try FileManager.default.removeItem(atPath: a.path)
        FileManager.default.createFile(atPath: a.path, contents: Data("x".utf8))
        let failure = await #expect(throws: TransportFailure.self) { try await t.push(envelopes(1)) }
        #expect(failure?.kind == "unavailable" && failure?.message.contains("check that it is mounted and writable") == true)
        #expect(await t.status().state == "unavailable")
        try FileManager.default.removeItem(atPath: a.path)
        try FileManager.default.createDirectory(atPath: a.path, withIntermediateDirectories: false)
    }

    @Test func blobsAreValidatedStoredAndFound() async throws {
        let t = writer(), r = reader()
        for bad in ["../../../etc/passwd", String(repeating: "AB", count: 32), "ab", String(repeating: "a", count: 63) + "/"] {
            await #expect(throws: TransportFailure.rejected("the blob key \"\(bad)\" is not 64 lowercase hex digits")) {
                try await t.putBlob(key: bad, from: "/etc/hostname")
            }
            await #expect(throws: TransportFailure.self) { try await t.hasBlob(key: bad) }
            await #expect(throws: TransportFailure.self) { try await t.getBlob(key: bad, to: b.path + "/out") }
        }
        let key = String(repeating: "0f", count: 32)
        let source = a.path + "/sealed.bin"
        let content = Data((0..<5000).map { UInt8($0 % 251) })
        try content.write(to: URL(fileURLWithPath: source))
        #expect(try await !r.hasBlob(key: key))
        try await t.putBlob(key: key, from: source)
        try await t.putBlob(key: key, from: source)  // idempotent
        #expect(try await t.hasBlob(key: key))
        try SyncTool.mirror(from: a.path, to: b.path)
        #expect(try await r.hasBlob(key: key))
        #expect(try await r.getBlob(key: key, to: b.path + "/fetched"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: b.path + "/fetched")) == content)
        #expect(try await !r.getBlob(key: String(repeating: "1", count: 64), to: b.path + "/none"))
        // The writer's own blobs changed since a moment; its copy written again.
        #expect(try await t.blobsChanged(since: nil) == [key])
        let later = Int64(Date().timeIntervalSince1970) + 5
        #expect(try await t.blobsChanged(since: later).isEmpty)
        let replacement = Data(repeating: 7, count: 100)
        try replacement.write(to: URL(fileURLWithPath: source))
        try await t.replaceBlob(key: key, from: source)
        #expect(try await t.getBlob(key: key, to: a.path + "/again"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: a.path + "/again")) == replacement)
        #expect(try await r.blobsChanged(since: nil) == [key], "the writer's copy, mirrored")
        // The reader's copies: its own first (once it stores one), then the writer's.
        try await r.putBlob(key: key, from: source)
        try SyncTool.mirror(from: b.path, to: a.path)
        #expect(try await r.getBlob(key: key, to: b.path + "/first", copy: 0))
        #expect(try await r.getBlob(key: key, to: b.path + "/second", copy: 1))
        #expect(try await !r.getBlob(key: key, to: b.path + "/third", copy: 2))
        #expect(try Data(contentsOf: URL(fileURLWithPath: b.path + "/first")) == replacement)
        #expect(try Data(contentsOf: URL(fileURLWithPath: b.path + "/second")) == content)
    }

    @Test mutating func aWaitingPullWakesOnANewFile() async throws {
        let batch = envelopes(2)
        _ = try await writer().push(batch)
        // No rescan and no timeout within the wait: only the file event can end it early.
        let r = reader(poll: .seconds(600))
        _ = try await r.pull(after: nil, limit: 10, wait: .zero)  // the reader's own directories exist
        let source = a.path, target = b.path
        let copier = Task {
            try await Task.sleep(for: .milliseconds(300))
            try SyncTool.mirror(from: source, to: target)  // a new device directory appears
        }
        let start = ContinuousClock.now
        let page = try await r.pull(after: nil, limit: 10, wait: .seconds(120))
        let took = ContinuousClock.now - start
        try await copier.value
        #expect(await r.status().details["watch"] == "inotify")
        #expect(page.envelopes == batch)
        #expect(took < .seconds(60), "woke after \(took), not by the file event")
    }

    @Test func aWaitingPullReturnsPromptlyWhenCancelled() async throws {
        let r = reader(poll: .seconds(600))
        let start = ContinuousClock.now
        let pull = Task { try await r.pull(after: nil, limit: 10, wait: .seconds(600)) }
        try await Task.sleep(for: .milliseconds(200))
        pull.cancel()
        let page = try await pull.value
        #expect(page.envelopes.isEmpty)
        // Ended by the cancellation, long before its wait.
        #expect(ContinuousClock.now - start < .seconds(60))
        await r.close()
    }

    @Test func aCursorFromElsewhereIsRejected() async throws {
        await #expect(throws: TransportFailure.self) { try await reader().pull(after: "relay:17", limit: 10, wait: .zero) }
    }
}

/// A wall clock a test moves by hand.
final class TestClock: @unchecked Sendable {
    // @unchecked: `stored` is only touched with `lock` held.
    private let lock = NSLock()
    private var stored: Int64
    init(millis: Int64) { stored = millis }
    var millis: Int64 {
        get { lock.lock(); defer { lock.unlock() }; return stored }
        set { lock.lock(); stored = newValue; lock.unlock() }
    }
}
