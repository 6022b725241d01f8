import FerryModel
import FerryTestSupport
import Testing
@testable import FerrySync

@Suite struct FolderFrameTests {
    @Test func crc32MatchesTheStandardCheckValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([UInt8]()) == 0)
        let a = Array("hello, ".utf8), b = Array("world".utf8)
        #expect(CRC32.update(CRC32.checksum(a), with: b) == CRC32.checksum(a + b))
    }

    /// The eight-bytes-at-a-time path (contiguous bytes) agrees with the byte-at-a-time one
    /// (a lazy collection) at every length and alignment.
    @Test func crc32FastPathAgreesWithTheBytewiseOne() {
        var rng = SplitMix64(seed: 7)
        let bytes = (0..<300).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        for start in 0..<9 {
            for end in start...bytes.count {
                let slice = bytes[start..<end]
                #expect(CRC32.checksum(slice) == CRC32.checksum(slice.lazy.map { $0 }))
            }
        }
    }

    /// An envelope framed in place (as pushes and compaction write them) is the same bytes as
    /// the frame of its encoded form, appended after anything, and reads back as it.
    @Test func anEnvelopeFramedInPlaceIsTheFrameOfItsEncoding() {
        let sealer = EnvelopeSealer(keys: Fixtures.keys, device: NodeID(0x42))
        let envelopes = [sealer.seal(Fixtures.version),
                         sealer.seal(RecordVersion(entity: "note", id: "gone", hlc: Fixtures.stamp, deleted: true, payload: nil))]
        for prefix in [[UInt8](), [1, 2, 3]] {
            var inPlace = prefix, copied = prefix
            for envelope in envelopes {
                Frame.append(envelope, to: &inPlace)
                Frame.append(envelope.encoded, to: &copied)
            }
            #expect(inPlace == copied)
            guard case .frame(let payload, let next) = Frame.read(inPlace[...], at: prefix.count) else {
                Issue.record("the first frame does not read back")
                continue
            }
            #expect(Array(inPlace[payload]) == envelopes[0].encoded)
            guard case .frame(let second, _) = Frame.read(inPlace[...], at: next, final: true) else {
                Issue.record("the second frame does not read back")
                continue
            }
            #expect(Array(inPlace[second]) == envelopes[1].encoded)
        }
    }

    /// Three frames (one empty) read back from every prefix: complete frames come out in order,
    /// a cut inside a frame is `incomplete` (or `corrupt` when the bytes are final), and reading
    /// on from the returned offset once the rest arrives yields exactly the others.
    @Test func readsFramesCutAtEveryByte() {
        let payloads: [[UInt8]] = [Array(0..<40), [], Array(repeating: 0x46, count: 25)]
        var bytes: [UInt8] = []
        var ends: [Int] = []
        for p in payloads {
            Frame.append(p, to: &bytes)
            ends.append(bytes.count)
        }
        for cut in 0...bytes.count {
            let prefix = Array(bytes[..<cut])
            var offset = 0
            var got: [[UInt8]] = []
            var last: Frame.ReadResult?
            while offset < prefix.count {
                let r = Frame.read(prefix, at: offset)
                last = r
                guard case .frame(let payload, let next) = r else { break }
                got.append(Array(prefix[payload]))
                offset = next
            }
            let complete = ends.filter { $0 <= cut }.count
            #expect(got == Array(payloads.prefix(complete)), "cut \(cut)")
            if offset < cut { #expect(last == .incomplete, "cut \(cut)") }
            // The rest arrives: resume at the kept offset.
            var rest: [[UInt8]] = []
            while offset < bytes.count, case .frame(let payload, let next) = Frame.read(bytes, at: offset) {
                rest.append(Array(bytes[payload]))
                offset = next
            }
            #expect(got + rest == payloads, "cut \(cut)")
            // Final bytes are never waited on.
            if cut < bytes.count, !ends.contains(cut) {
                let start = ends.last(where: { $0 <= cut }) ?? 0
                if case .corrupt = Frame.read(prefix, at: start, final: true) {} else { Issue.record("cut \(cut): a final cut frame must be corrupt") }
            }
        }
    }

    @Test func corruptionIsSkippedToTheNextFrame() {
        let payloads: [[UInt8]] = [Array(0..<30), Array(30..<90), Array(90..<100)]
        var bytes: [UInt8] = []
        var starts: [Int] = []
        for p in payloads {
            starts.append(bytes.count)
            Frame.append(p, to: &bytes)
        }
        // Every single flipped byte in the middle frame: the first and last still read.
        for at in starts[1]..<starts[2] {
            var damaged = bytes
            damaged[at] ^= 0x5A
            let good = readAll(damaged, final: true)
            #expect(good.first == payloads[0] && good.last == payloads[2], "flip at \(at)")
            #expect(!good.contains(payloads[1]), "flip at \(at)")
        }
        // An absurd length.
        var huge = bytes
        huge[starts[1] + 4] = 0xFF
        guard case .corrupt(_, let resume) = Frame.read(huge, at: starts[1]) else { Issue.record("absurd length"); return }
        #expect(resume == starts[2])
    }

    @Test func randomBytesNeverTrapAndAlwaysProgress() {
        var rng = SplitMix64(seed: 7)
        for round in 0..<300 {
            var bytes = (0..<Int.random(in: 0...200, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if round % 3 == 0 { bytes.insert(contentsOf: Frame.encode([1, 2, 3]), at: bytes.count / 2) }
            var offset = 0
            var steps = 0
            while offset < bytes.count {
                steps += 1
                switch Frame.read(bytes, at: offset, final: true) {
                case .frame(_, let next): #expect(next > offset); offset = next
                case .corrupt(_, let resume): #expect(resume > offset); offset = resume
                case .incomplete: Issue.record("final bytes reported incomplete"); offset = bytes.count
                }
            }
            #expect(steps <= bytes.count + 1)
            if round % 3 == 0 { #expect(readAll(bytes, final: true).contains([1, 2, 3])) }
        }
    }

    @Test func fileHeaderRoundTripsAndRejectsDamage() throws {
        let h = FolderFileHeader(kind: .snapshot, owner: FolderFixture.owner, device: NodeID(9), seq: 42, bodyLength: 1234)
        let bytes = h.encoded
        #expect(bytes.count == FolderFileHeader.encodedSize)
        #expect(try FolderFileHeader.decode(bytes[...]) == h)
        for cut in 0..<bytes.count {
            #expect(throws: EnvelopeError.truncated(needed: 52, available: cut)) { try FolderFileHeader.decode(bytes[..<cut]) }
        }
        for at in 0..<bytes.count {
            var damaged = bytes
            damaged[at] ^= 1
            #expect(throws: EnvelopeError.self) { try FolderFileHeader.decode(damaged[...]) }
        }
    }

    @Test func classifiesFileNames() {
        let seq = "00000000000000a5"
        #expect(FolderFileName("seg-\(seq).fseg") == .segment(seq: 0xa5))
        #expect(FolderFileName("snap-\(seq).fsnap") == .snapshot(seq: 0xa5))
        for copy in ["seg-\(seq).fseg.sync-conflict-20260101-120000-ABCDEFG", "seg-\(seq) (1).fseg",
                     "seg-\(seq)-conflict-20260101.fseg", "seg-\(seq) 2.fseg", "snap-\(seq) (conflicted copy).fsnap"] {
            #expect(FolderFileName(copy) == .conflictCopy, "\(copy)")
        }
        for ignored in [".tmp-1-seg-\(seq).fseg", ".syncthing.seg-\(seq).fseg.tmp", "seg-\(seq).fseg.part",
                        "seg-\(seq).fseg.PART", "seg-\(seq).fseg.Partial", "seg-\(seq).fseg.!sync", "seg-\(seq).fseg.crdownload",
                        "seg-\(seq).fseg.download", "seg-\(seq).fseg.TMP", "seg-\(seq).fseg.~1~", "snap-\(seq).fsnap.~tmp",
                        "seg-00000000000000A5.fseg", "seg-a5.fseg", "notes.txt", "blobs", String(repeating: "s", count: 300)] {
            #expect(FolderFileName(ignored) == .ignored, "\(ignored)")
        }
        #expect(FolderFileName.segmentName(0xa5) == "seg-\(seq).fseg")
        #expect(FolderFileName.isValidBlobKey(String(repeating: "ab", count: 32)))
        for bad in ["../../etc/passwd", String(repeating: "AB", count: 32), String(repeating: "a", count: 63), ""] {
            #expect(!FolderFileName.isValidBlobKey(bad))
        }
    }

    @Test func cursorRoundTripsAndIsCapped() throws {
        var c = FolderCursor()
        var d = FolderCursor.Device()
        d.consumeSegment(1); d.consumeSegment(3); d.consumeSegment(4)
        #expect(d.floor == 1 && d.ahead == [3, 4])
        d.consumeSegment(2)
        #expect(d.floor == 4 && d.ahead.isEmpty)
        d.consumeSegment(7)
        d.partial["seg-0000000000000005.fseg"] = 99
        d.names = ["seg-0000000000000001 (1).fseg"]
        c.devices[0xa1] = d
        #expect(try FolderCursor(parsing: c.text) == c)
        #expect(try FolderCursor(parsing: nil) == FolderCursor())
        // The text: compact JSON with sorted keys, empty parts and a zero epoch left out, any
        // name escaped, every UInt64 whole.
        var many = FolderCursor()
        many.epoch = 3
        many.devices[0xb2] = FolderCursor.Device(floor: .max)
        many.devices[0x0a] = FolderCursor.Device(floor: 9, ahead: [11, 12], names: ["a (1).fseg", "z \"q\"\\ é\u{1}.fseg"],
                                                  partial: ["seg-000000000000000d.fseg": 40, "b.fseg": 7])
        #expect(many.text == #"{"d":{"000000000000000a":{"f":9,"n":["a (1).fseg","z \"q\"\\ é\u0001.fseg"],"#
            + #""p":{"b.fseg":7,"seg-000000000000000d.fseg":40},"x":[11,12]},"00000000000000b2":{"f":18446744073709551615}},"v":1,"w":3}"#)
        #expect(try FolderCursor(parsing: many.text) == many)
        #expect(FolderCursor().text == #"{"d":{},"v":1}"#)
        #expect(throws: FolderCursorError.self) { try FolderCursor(parsing: "{\"v\":1,\"d\":{\"../x\":{\"f\":1}}}") }
        #expect(throws: FolderCursorError.self) { try FolderCursor(parsing: "cursor:relay:17") }
        #expect(throws: FolderCursorError.self) { try FolderCursor(parsing: String(repeating: " ", count: FolderCursor.maxTextBytes + 1)) }
        var s = FolderCursor.Device(floor: 2, ahead: [5])
        s.supersede(through: 4)
        #expect(s.floor == 5 && s.ahead.isEmpty)
    }

    private func readAll(_ bytes: [UInt8], final: Bool) -> [[UInt8]] {
        var offset = 0
        var out: [[UInt8]] = []
        while offset < bytes.count {
            switch Frame.read(bytes, at: offset, final: final) {
            case .frame(let payload, let next): out.append(Array(bytes[payload])); offset = next
            case .corrupt(_, let resume): offset = resume
            case .incomplete: return out
            }
        }
        return out
    }
}
