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
    /// The highest seq of this device's own files that `load` found.
    var ownHigh: UInt64 = 0
    /// The highest seq of a file under one of this device's names that is not this device's
    /// (`load` found it): taken, never written, never expected.
    var foreignHigh: UInt64 = 0
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
    ///
    /// A file under one of this device's names that is not this device's (its header names
    /// another owner, device, kind or seq, or is not a header at all; or something other than a
    /// regular file) is not read as one of its files: it supersedes nothing, is never removed,
    /// and is not expected later; its seq is taken (`foreignHigh`), since readers consumed it
    /// under that name, so no file of this device is ever written there.
    static func load(dir: String, owner: OwnerID, device: NodeID) throws(FolderIOError) -> FolderOwnLog {
        guard let identity = try FolderIO.kind(of: dir), identity.isDirectory else {
            throw FolderIOError(call: "stat", path: dir, code: ENOENT)
        }
        var log = FolderOwnLog(directory: (identity.device, identity.inode))
        var segs: [UInt64] = [], snaps: [UInt64] = []
        // A temporary file left by a write that never finished (ferryd was killed) is this
        // device's to remove, blobs' included: the folder is every device's disk.
        if try FolderIO.kind(of: dir + "/blobs")?.isDirectory == true {
            for name in try FolderIO.list(dir + "/blobs") where name.hasPrefix(".tmp-") {
                if try FolderIO.kind(of: dir + "/blobs/" + name)?.isRegular == true { try FolderIO.remove(dir + "/blobs/" + name) }
            }
        }
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
        /// Reads one of the files; nil when it is not this device's (then its seq is taken).
        func read(_ name: String, _ kind: FolderFileHeader.Kind, _ seq: UInt64) throws(FolderIOError) -> (headers: [(EnvelopeHeader, Int)], size: UInt64)? {
            var headers: [(EnvelopeHeader, Int)] = []
            var bad = 0
            let outcome = try FolderFileReader.scan(
                path: dir + "/" + name, label: name, from: 0, expect: .init(kind: kind, owner: owner, device: device, seq: seq),
                visit: {
                    headers.append(($0.header, Frame.size(of: $0)))
                    return true
                }, unreadable: { _ in bad += 1 })
            switch outcome {
            case .badHeader, .notAFile:
                log.unreadable += 1
                log.foreignHigh = max(log.foreignHigh, seq)
                return nil
            case .gone, .progressed:
                log.unreadable += bad
                return (headers, UInt64((try FolderIO.kind(of: dir + "/" + name))?.size ?? 0))
            }
        }
        // The newest snapshot of this device's supersedes its older files.
        for seq in snaps.sorted(by: >) {
            guard let (headers, size) = try read(FolderFileName.snapshotName(seq), .snapshot, seq) else { continue }
            for (header, frameSize) in headers { log.note(header, size: frameSize) }
            log.snapshot = (seq, size)
            log.ownHigh = max(log.ownHigh, seq)
            for older in snaps where older < seq { try FolderIO.remove(dir + "/" + FolderFileName.snapshotName(older)) }
            for superseded in segs where superseded <= seq { try FolderIO.remove(dir + "/" + FolderFileName.segmentName(superseded)) }
            segs.removeAll { $0 <= seq }
            break
        }
        for seq in segs.sorted() {
            guard let (headers, size) = try read(FolderFileName.segmentName(seq), .segment, seq) else { continue }
            for (header, frameSize) in headers { log.note(header, size: frameSize) }
            log.segments[seq] = size
            log.ownHigh = max(log.ownHigh, seq)
        }
        log.lastSeq = max(log.ownHigh, log.foreignHigh)
        return log
    }
}
