import FerryModel
import Glibc

/// What this device has written into its own directory of the synced folder: the writer's state,
/// rebuilt from the files when the transport first writes, owned by the transport's writer lock.
struct FolderOwnLog: Sendable {
    /// The identity of the directory the state was read from; another one (the folder was
    /// unmounted and came back, or was replaced) means the state must be read again.
    var directory: (device: UInt64, inode: UInt64)
    /// The highest segment seq written or superseded; the next segment is `lastSeq + 1`. `load`
    /// sets it from the files; the transport then raises it to the highest seq it remembers
    /// using (`FolderWriterState.high`), so a seq is never used twice.
    var lastSeq: UInt64 = 0
    /// This device's segments in the folder: seq to size in bytes.
    var segments: [UInt64: UInt64] = [:]
    /// This device's snapshot: the highest seq it supersedes, and its size.
    var snapshot: (seq: UInt64, bytes: UInt64)?
    /// Frames in this device's own files that could not be read when it was loaded.
    var unreadable = 0
    /// The newest stamp of each stream in this device's files, and the size of its frame.
    var streams = StreamTable()
    /// Bytes of frames that are the newest of their stream, and of frames superseded by a
    /// newer one of the same stream (what compaction would drop).
    var liveBytes: UInt64 = 0
    var garbageBytes: UInt64 = 0

    /// Accounts for one frame of `size` bytes holding an envelope with `header` that is in the
    /// files already (an older version than its stream's newest counts as superseded).
    mutating func note(_ header: EnvelopeHeader, size: Int) {
        if noteIfNewer(header, size: size) != .added { garbageBytes += UInt64(size) }
    }

    /// What `noteIfNewer` found.
    enum Noted: Equatable {
        /// The stream's newest version in the files now: the frame is to be written.
        case added
        /// The files hold this very version of the stream already.
        case sameVersion
        /// The files hold a newer version of the stream, which wins over this one on every
        /// reader.
        case olderVersion
    }

    /// Accounts for a frame about to be written, unless the files hold its stream at this stamp
    /// or a greater one; nothing changes then. One hash lookup in the usual case (a stream's
    /// first frame, or a newer one).
    mutating func noteIfNewer(_ header: EnvelopeHeader, size: Int) -> Noted {
        guard let existing = streams.updateValue((header.stamp, UInt32(clamping: size)), forKey: header.stream) else {
            liveBytes += UInt64(size)
            return .added
        }
        if existing.stamp >= header.stamp {
            streams.updateValue(existing, forKey: header.stream)
            return existing.stamp == header.stamp ? .sameVersion : .olderVersion
        }
        garbageBytes += UInt64(existing.size)
        liveBytes -= UInt64(existing.size)
        liveBytes += UInt64(size)
        return .added
    }

    var segmentBytes: UInt64 { segments.values.reduce(0, +) }

    /// Reads the state from `dir`, tidying what a crash may have left: temporary files, and
    /// segments or older snapshots that a finished snapshot supersedes.
    static func load(dir: String, owner: OwnerID, device: NodeID) throws(FolderIOError) -> FolderOwnLog {
        guard let identity = try FolderIO.kind(of: dir), identity.isDirectory else {
            throw FolderIOError(call: "stat", path: dir, code: ENOENT)
        }
        var log = FolderOwnLog(directory: (identity.device, identity.inode))
        var segs: [UInt64] = [], snaps: [UInt64] = []
        for name in try FolderIO.list(dir) {
            if name.hasPrefix(".tmp-") {
                if try FolderIO.kind(of: dir + "/" + name)?.isRegular == true { try FolderIO.remove(dir + "/" + name) }
                continue
            }
            switch FolderFileName(name) {
            case .segment(let seq): segs.append(seq)
            case .snapshot(let seq): snaps.append(seq)
            case .conflictCopy, .ignored: break
            }
        }
        // Something else than a file under a Ferry name (a directory a sync tool carried, a
        // FIFO) is no file of this device's: not read, not removed, never waited on; the next
        // segment is written above its number all the same, since that name is taken.
        var oddHigh: UInt64 = 0
        func files(_ seqs: [UInt64], named name: (UInt64) -> String, takesSeq: Bool) throws(FolderIOError) -> [UInt64] {
            var kept: [UInt64] = []
            for seq in seqs {
                if let k = try FolderIO.kind(of: dir + "/" + name(seq)), !k.isRegular {
                    log.unreadable += 1
                    if takesSeq { oddHigh = max(oddHigh, seq) }
                } else {
                    kept.append(seq)
                }
            }
            return kept
        }
        segs = try files(segs, named: FolderFileName.segmentName, takesSeq: true)
        snaps = try files(snaps, named: FolderFileName.snapshotName, takesSeq: false)
        log.lastSeq = max(log.lastSeq, oddHigh)
        if let newest = snaps.max() {
            for seq in snaps where seq < newest { try FolderIO.remove(dir + "/" + FolderFileName.snapshotName(seq)) }
            for seq in segs where seq <= newest { try FolderIO.remove(dir + "/" + FolderFileName.segmentName(seq)) }
            segs.removeAll { $0 <= newest }
            log.snapshot = (newest, 0)
            log.lastSeq = max(log.lastSeq, newest)
        }
        var toRead: [(String, FolderFileHeader.Kind, UInt64)] = segs.map { (FolderFileName.segmentName($0), .segment, $0) }
        if let snap = log.snapshot { toRead.insert((FolderFileName.snapshotName(snap.seq), .snapshot, snap.seq), at: 0) }
        for (name, kind, seq) in toRead {
            var headers: [(EnvelopeHeader, Int)] = []
            var bad = 0
            let outcome = try FolderFileReader.scan(
                path: dir + "/" + name, label: name, from: 0, expect: .init(kind: kind, owner: owner, device: device, seq: seq),
                visit: {
                    headers.append(($0.header, Frame.size(of: $0)))
                    return true
                }, unreadable: { _ in bad += 1 })
            for (header, size) in headers { log.note(header, size: size) }
            log.unreadable += bad
            let size = UInt64((try FolderIO.kind(of: dir + "/" + name))?.size ?? 0)
            switch outcome {
            case .badHeader, .notAFile: log.unreadable += 1
            case .gone, .progressed: break
            }
            switch kind {
            case .segment:
                log.segments[seq] = size
                log.lastSeq = max(log.lastSeq, seq)
            case .snapshot:
                log.snapshot = (seq, size)
            }
        }
        return log
    }
}
