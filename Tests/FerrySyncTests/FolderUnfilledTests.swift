import FerryModel
import FerryTestSupport
import Foundation
import Testing
@testable import FerrySync

/// Files that a sync tool preallocates (zeros of the full size) and fills in later: the reader
/// waits for the zeros like for a torn tail, and never reports them as damage. Device A writes
/// into folder `a`; the test plays the sync tool into folder `b`, where device B reads.
@Suite struct FolderUnfilledTests {
    let a = ScratchFolder(), b = ScratchFolder()
    var rng = SplitMix64(seed: 11)

    func writer() -> FolderTransport {
        FolderTransport(name: "folder", path: a.path, owner: FolderFixture.owner, device: FolderFixture.writer,
                        options: FolderFixture.options())
    }

    func reader() -> FolderTransport {
        FolderTransport(name: "folder", path: b.path, owner: FolderFixture.owner, device: FolderFixture.reader,
                        options: FolderFixture.options())
    }

    mutating func envelopes(_ count: Int) -> [Envelope] {
        var out: [Envelope] = []
        for i in 0..<count { out.append(FolderFixture.envelope(stream: UInt64(i) + 1, millis: Int64(i), rng: &rng)) }
        return out
    }

    @Test mutating func aPreallocatedSegmentFilledInLaterIsRead() async throws {
        let batch = envelopes(6)
        _ = try await writer().push(batch)
        let name = SyncTool.files(a.path)[0]
        let real = try Data(contentsOf: URL(fileURLWithPath: FolderFixture.deviceDirectory(a.path) + "/" + name))
        let r = reader()
        // The sync tool writes the header, sets the full size (zeros), and fills in the rest
        // later: into the same file, or (here) by renaming the finished copy over it.
        let target = FolderFixture.deviceDirectory(b.path) + "/" + name
        try SyncTool.copy(name, from: a.path, to: b.path, prefix: FolderFileHeader.encodedSize)
        #expect(truncate(target, off_t(real.count)) == 0)
        let first = try await r.drain(from: nil)
        #expect(first.envelopes.isEmpty && first.unreadable.isEmpty)
        #expect(await r.status().state == "ok")
        let staging = FolderFixture.deviceDirectory(b.path) + "/.incoming"
        try real.write(to: URL(fileURLWithPath: staging))
        #expect(rename(staging, target) == 0)
        let second = try await r.drain(from: first.cursor)
        #expect(second.envelopes == batch && second.unreadable.isEmpty)
    }

    @Test mutating func aPreallocatedSegmentFilledInPlaceIsRead() async throws {
        let batch = envelopes(6)
        _ = try await writer().push(batch)
        let name = SyncTool.files(a.path)[0]
        let real = [UInt8](try Data(contentsOf: URL(fileURLWithPath: FolderFixture.deviceDirectory(a.path) + "/" + name)))
        let r = reader()
        let target = FolderFixture.deviceDirectory(b.path) + "/" + name
        try SyncTool.copy(name, from: a.path, to: b.path, prefix: 0)
        #expect(truncate(target, off_t(real.count)) == 0)
        // Filled in place, in two steps: what is filled is read, the rest waited for.
        var cursor: String?
        var seen: [Envelope] = []
        for filled in [real.count / 2, real.count] {
            let handle = try #require(FileHandle(forWritingAtPath: target))
            try handle.write(contentsOf: Data(real[..<filled]))
            try handle.close()
            let got = try await r.drain(from: cursor)
            #expect(got.unreadable.isEmpty)
            seen += got.envelopes
            cursor = got.cursor
        }
        #expect(seen == batch)
    }

    /// The reader on a file whose bytes from `cut` on are still zeros, for every `cut`, and on
    /// files with a hole of zeros anywhere: it delivers a prefix of the frames and nothing
    /// unreadable, and reading the finished file from where it stopped delivers the rest.
    @Test mutating func zerosNotFilledInYetAreWaitedForAtEverySplitPoint() throws {
        let dir = a.path
        let envelopes = envelopes(6)
        var body: [UInt8] = []
        for e in envelopes { Frame.append(e.encoded, to: &body) }
        let header = FolderFileHeader(kind: .segment, owner: FolderFixture.owner, device: FolderFixture.writer, seq: 1, bodyLength: UInt64(body.count))
        let real = header.encoded + body
        let path = dir + "/seg-0000000000000001.fseg"
        let expect = FolderFileReader.Expectation(kind: .segment, owner: FolderFixture.owner, device: FolderFixture.writer, seq: 1)

        func read(_ bytes: [UInt8], from offset: UInt64) throws -> (got: [Envelope], bad: [String], outcome: FolderFileReader.Outcome) {
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            var got: [Envelope] = [], bad: [String] = []
            let outcome = try FolderFileReader.scan(path: path, label: "seg", from: offset, expect: expect,
                                                    visit: { got.append($0); return true }, unreadable: { bad.append($0) })
            return (got, bad, outcome)
        }
        func check(_ partial: [UInt8], _ what: String) throws {
            let first = try read(partial, from: 0)
            #expect(first.bad.isEmpty, "\(what): \(first.bad)")
            #expect(first.got == Array(envelopes.prefix(first.got.count)), "\(what)")
            guard case .progressed(let offset, let finished) = first.outcome else {
                Issue.record("\(what): \(first.outcome)")
                return
            }
            #expect(finished == (partial == real), "\(what)")
            let rest = try read(real, from: offset)
            #expect(rest.bad.isEmpty && first.got + rest.got == envelopes, "\(what)")
            #expect(rest.outcome == .progressed(offset: UInt64(real.count), finished: true), "\(what)")
        }
        for cut in 0...real.count {
            try check(Array(real[..<cut]) + [UInt8](repeating: 0, count: real.count - cut), "cut at \(cut)")
        }
        for start in 0..<(real.count - 64) {
            var holed = real
            for k in start..<min(start + 64 + start % 97, real.count) { holed[k] = 0 }
            try check(holed, "hole from \(start)")
        }
    }

    /// A header caught half-way through being written in place (not zeros, not yet right) is
    /// read again while the file may still change, and its frames are read once it is whole; a
    /// header that stays bad past `settleSeconds` is reported and the file skipped.
    @Test mutating func aHeaderHalfWrittenInPlaceIsWaitedForAndOneThatStaysBadIsReported() async throws {
        let batch = envelopes(4)
        _ = try await writer().push(batch)
        let name = SyncTool.files(a.path)[0]
        let real = [UInt8](try Data(contentsOf: URL(fileURLWithPath: FolderFixture.deviceDirectory(a.path) + "/" + name)))
        let target = FolderFixture.deviceDirectory(b.path) + "/" + name
        try SyncTool.copy(name, from: a.path, to: b.path)
        var garbled = real
        for k in 0..<6 { garbled[k] = 0x5A }
        try Data(garbled).write(to: URL(fileURLWithPath: target))
        let r = reader()
        let first = try await r.drain(from: nil)
        #expect(first.envelopes.isEmpty && first.unreadable.isEmpty, "a file changed just now is not judged yet")
        try Data(real).write(to: URL(fileURLWithPath: target))
        let second = try await r.drain(from: first.cursor)
        #expect(second.envelopes == batch && second.unreadable.isEmpty)

        // The same damage in a file nobody changed for a minute is damage.
        let other = ScratchFolder()
        let late = FolderTransport(name: "folder", path: other.path, owner: FolderFixture.owner, device: FolderFixture.reader,
                                   options: FolderFixture.options())
        let dir = FolderFixture.deviceDirectory(other.path)
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data(garbled).write(to: URL(fileURLWithPath: dir + "/" + name))
        var times = [timeval(tv_sec: time(nil) - 120, tv_usec: 0), timeval(tv_sec: time(nil) - 120, tv_usec: 0)]
        #expect(utimes(dir + "/" + name, &times) == 0)
        let judged = try await late.drain(from: nil)
        #expect(judged.envelopes.isEmpty && judged.unreadable.count == 1, "\(judged.unreadable)")
        #expect(try await late.drain(from: judged.cursor).unreadable.isEmpty, "reported once")
    }

    @Test func damageThatIsNotZerosIsStillSkipped() {
        var body: [UInt8] = []
        Frame.append([UInt8](repeating: 7, count: 100), to: &body)
        Frame.append([UInt8](repeating: 9, count: 100), to: &body)
        var flipped = body
        flipped[40] ^= 0xFF
        #expect(!FolderFileReader.unfilled(flipped[...], at: 0))
        var garbage = body
        garbage[0] = 0x41
        #expect(!FolderFileReader.unfilled(garbage[...], at: 0))
        var oneZero = body
        oneZero[2] = 0
        #expect(!FolderFileReader.unfilled(oneZero[...], at: 0))
        var zeroedMagic = body
        for k in 1..<4 { zeroedMagic[k] = 0 }
        #expect(FolderFileReader.unfilled(zeroedMagic[...], at: 0))
        var zeroRun = body
        for k in 30..<62 { zeroRun[k] = 0 }
        #expect(FolderFileReader.unfilled(zeroRun[...], at: 0))
        var shortRun = body
        for k in 30..<40 { shortRun[k] = 0 }
        #expect(!FolderFileReader.unfilled(shortRun[...], at: 0))
    }
}
