/// What a writer remembers about its own directory of the synced folder, outside the folder (in
/// the store, see `FolderTransport.StateKeeper`), so that losing the folder's files cannot make
/// it forget: the seqs it used, which of its files must still be there, and which of its files
/// its store never saw.
///
/// It promises three things (docs/protocol.md "Lost files" and "Reading and the cursor"):
/// - a seq is never used twice: the next file is above both `high` and every seq on disk, so a
///   reader whose floor passed a seq never skips new bytes under an old name;
/// - `lost(names:)` says when files this device wrote and did not remove itself are gone: its
///   snapshot `snapshot`, or a segment in `base+1 ... high`. Files a newer snapshot on disk
///   supersedes are not expected any more (a copy of this device with a newer state compacted);
/// - `reread` names the own files found on disk above what the state remembered (written by a
///   copy of this device whose store is not this one: the store was restored from a backup),
///   which the reader reads back like another device's, so their records come back.
///
/// Its text is compact JSON `{"b":B,"e":E,"h":H,"s":S,"v":1}`, with `"ra":A,"rt":T` between
/// `h` and `s` while `reread` is set and `"t":T` between `s` and `v` while a seq is `taken`;
/// parsing is pure and capped at `maxTextBytes`.
struct FolderWriterState: Sendable, Equatable {
    /// The highest segment or snapshot seq this device wrote into the directory.
    var high: UInt64 = 0
    /// Segments up to `base` are not expected on disk (a snapshot superseded them, or they
    /// were given up when the files were lost).
    var base: UInt64 = 0
    /// The seq of the newest snapshot holding data that is expected on disk; 0 for none (an
    /// empty snapshot written after a loss is not expected: it holds nothing).
    var snapshot: UInt64 = 0
    /// How many times this device found its files lost. A pull cursor carries the epoch it was
    /// made in (`FolderCursor.epoch`); an older one means the transport has not been started
    /// over since the last loss, which is then reported again (`hostLostData`).
    var epoch: UInt64 = 0
    /// Own files this device's store does not know the envelopes of: nil for none.
    var reread: Reread?
    /// The highest seq of a file found under one of this device's names that is not this
    /// device's (another program's, or junk): readers consumed it under that name, so no file
    /// of this device is written at or below it; nor is it expected (`lost` ignores it).
    var taken: UInt64 = 0

    /// Own segments and snapshots with seqs in `after+1 ... through`, found on disk above the
    /// `high` the state remembered. The store that keeps this state did not write them (a copy
    /// of this device did, before this store was restored from an older backup; or this store,
    /// just before a crash kept it from remembering), so the reader reads them back once like
    /// another device's files, keeping its progress in the pull cursor's entry for this device
    /// (made with floor `after` when the cursor has none). The range stays after they were read:
    /// that entry says how far the reader got, and a reader starting over (no cursor) reads them
    /// again, which the engine's merge makes harmless.
    struct Reread: Sendable, Equatable {
        var after: UInt64
        var through: UInt64
    }

    static let maxTextBytes = 256

    init() {}

    init(high: UInt64, base: UInt64, snapshot: UInt64, epoch: UInt64, reread: Reread? = nil, taken: UInt64 = 0) {
        self.high = high
        self.base = base
        self.snapshot = snapshot
        self.epoch = epoch
        self.reread = reread
        self.taken = taken
    }

    /// The highest seq used in the directory, by this device or not: the next file goes above.
    var highestUsed: UInt64 { max(high, taken) }

    /// Reads the text; nil or empty text is the state of a device that never wrote.
    init(parsing text: String?) throws(FolderCursorError) {
        guard let text, !text.isEmpty else {
            self.init()
            return
        }
        let bytes = Array(text.utf8)
        guard bytes.count <= Self.maxTextBytes else {
            throw FolderCursorError("the folder writer state is \(bytes.count) bytes, more than the limit of \(Self.maxTextBytes)")
        }
        // Flat: {"key":unsigned,...}; each key once; exactly the four keys (six with a reread
        // range, one more with a taken seq) and "v":1.
        var fields: [String: UInt64] = [:]
        var i = 0
        func fail(_ why: String) -> FolderCursorError {
            FolderCursorError("the folder writer state \"\(text.prefix(40))\" is not valid: \(why) at byte \(i)")
        }
        guard i < bytes.count, bytes[i] == UInt8(ascii: "{") else { throw fail("no opening brace") }
        i += 1
        while true {
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("no key") }
            i += 1
            let start = i
            while i < bytes.count, bytes[i] != UInt8(ascii: "\""), i - start < 8 { i += 1 }
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw fail("an unterminated key") }
            let key = String(decoding: bytes[start..<i], as: UTF8.self)
            i += 1
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw fail("no colon") }
            i += 1
            var value: UInt64 = 0
            let digits = i
            while i < bytes.count, (48...57).contains(bytes[i]) {
                let (times, o1) = value.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times.addingReportingOverflow(UInt64(bytes[i] - 48))
                guard !o1 && !o2 else { throw fail("a number too large") }
                value = sum
                i += 1
            }
            guard i > digits else { throw fail("no number") }
            guard fields.updateValue(value, forKey: key) == nil else { throw fail("key \(key) twice") }
            guard i < bytes.count else { throw fail("no closing brace") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            guard bytes[i] == UInt8(ascii: "}"), i + 1 == bytes.count else { throw fail("unexpected bytes") }
            break
        }
        guard fields["v"] == 1 else { throw FolderCursorError("the folder writer state has version \(fields["v"].map(String.init) ?? "none"); this build reads version 1") }
        let keys = Set(fields.keys).subtracting(["t"])
        guard keys == ["b", "e", "h", "s", "v"] || keys == ["b", "e", "h", "ra", "rt", "s", "v"],
              let b = fields["b"], let e = fields["e"], let h = fields["h"], let s = fields["s"] else {
            throw FolderCursorError("the folder writer state has the keys \(fields.keys.sorted()); version 1 has b, e, h, s and v, ra and rt together, and t")
        }
        guard b <= h, s <= h else { throw FolderCursorError("the folder writer state says base \(b) or snapshot \(s) above its highest seq \(h)") }
        var reread: Reread?
        if let after = fields["ra"], let through = fields["rt"] {
            guard after < through, through <= h else {
                throw FolderCursorError("the folder writer state's own files to read again, \(after) to \(through), are not a range up to its highest seq \(h)")
            }
            reread = Reread(after: after, through: through)
        }
        self.init(high: h, base: b, snapshot: s, epoch: e, reread: reread, taken: fields["t"] ?? 0)
    }

    /// The compact JSON text (`"t"` only when a seq is taken).
    var text: String {
        let range = reread.map { ",\"ra\":\($0.after),\"rt\":\($0.through)" } ?? ""
        let takenText = taken > 0 ? ",\"t\":\(taken)" : ""
        return "{\"b\":\(base),\"e\":\(epoch),\"h\":\(high)\(range),\"s\":\(snapshot)\(takenText),\"v\":1}"
    }

    /// Takes in that this device's directory holds files up to `seq`. Seqs above `high` are
    /// never used again, and the files above it are ones this state's store never saw, to be
    /// read back (`reread`, which grows to cover them and never shrinks). Pure.
    mutating func adopt(diskHigh seq: UInt64) {
        guard seq > high else { return }
        reread = Reread(after: min(reread?.after ?? high, high), through: seq)
        high = seq
    }

    /// Which files this device wrote and did not remove are missing from its directory, whose
    /// names are `names` (nil: the directory itself is gone); nil when none is. Pure.
    func lost(names: [String]?) -> String? {
        guard high > 0, snapshot > 0 || base < high else { return nil }  // nothing expected
        var segments: [UInt64] = []
        var newestSnapshot: UInt64 = 0
        for name in names ?? [] {
            switch FolderFileName(name) {
            case .segment(let seq): if seq > base && seq <= high { segments.append(seq) }
            case .snapshot(let seq): newestSnapshot = max(newestSnapshot, seq)
            case .conflictCopy, .ignored: break
            }
        }
        if names == nil || (segments.isEmpty && newestSnapshot == 0) {
            return "every file it wrote is gone (it had written up to seq \(high)): its directory was removed or emptied"
        }
        if snapshot > 0 && newestSnapshot < snapshot {
            return "its snapshot \(FolderFileName.snapshotName(snapshot)) is gone"
        }
        let from = max(base, newestSnapshot)
        guard from < high else { return nil }
        let present = Set(segments.filter { $0 > from })
        guard UInt64(present.count) < high - from else { return nil }
        var seq = from + 1
        while present.contains(seq) { seq += 1 }
        let missing = high - from - UInt64(present.count)
        return missing == 1 ? "its segment \(FolderFileName.segmentName(seq)) is gone"
            : "\(missing) of its segments are gone, the first \(FolderFileName.segmentName(seq))"
    }
}
