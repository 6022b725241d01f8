import FerryModel
import FerryStore
import Glibc
import Synchronization

/// A transport over a directory that a sync tool (Syncthing, Dropbox, Nextcloud, iCloud Drive)
/// keeps equal between devices. See docs/protocol.md "The folder transport" for the format.
///
/// Each device writes only below `PATH/ferry-v1/<owner>/<device>/`, so the sync tool never sees
/// two writers of one file: a push adds one immutable segment file, a compaction replaces this
/// device's segments by one snapshot of their newest envelope per stream. Files are written
/// under a hidden temporary name, fsynced and renamed into place, never rewritten. A pull reads
/// the other devices' directories and copes with what sync tools do: files arriving late, out of
/// order, half-written, duplicated as conflict copies, or deleted. Its own directory it reads
/// only for files its store never saw (found above the seq the store remembered, after the
/// store was restored from an older backup), once (`FolderWriterState.reread`).
///
/// The transport never creates `PATH` itself: a missing folder (unmounted) or a read-only one
/// fails with `.unavailable` and shows in `status()`. Files this device wrote that are gone
/// from an existing `PATH` (deleted by a user or the sync tool) fail a push or pull with
/// `.hostLostData`, so the engine writes everything again (see `checkOwnFiles`); a seq is
/// never used twice, as the writer remembers the ones it used outside the folder (`keeper`).
public final class FolderTransport: Transport {
    public let name: String
    /// The synced folder the user chose.
    public let path: String
    public let owner: OwnerID
    public let device: NodeID
    let options: Options

    /// `PATH/ferry-v1/<owner>`: one directory per device below it.
    let ownerDirectory: String
    /// This device's directory, the only one it writes into.
    let ownDirectory: String

    /// The writer's state; its lock also serializes every write into the own directory.
    let writer = Mutex(Writer())
    /// Where the writer keeps what it remembers outside the folder (`FolderWriterState`).
    let keeper: StateKeeper
    /// Counters and the last problem, for `status()`.
    let health = Mutex(Health())
    let watcher: FolderWatcher

    struct Health: Sendable {
        var corruptFrames = 0
        var lastCorrupt: String?
        var lastCorruptMillis: Int64?
        /// Another installation writing as this device, seen when a segment name this device
        /// was about to write was taken: what was found, and when.
        var otherWriter: String?
        var otherWriterMillis: Int64?
        /// Files (`device/name`) that end before their header says, and since when (Unix
        /// milliseconds): waited for, told by status() when one waits too long.
        var incompleteSince: [String: Int64] = [:]
        /// Paths under a Ferry file's name that are not regular files, reported once each.
        var notAFile: Set<String> = []
        var compactionError: String?
        var lastCompactionMillis: Int64?
        var compactions = 0
        /// Why this device's files were last found lost, and when.
        var lastLoss: String?
        var lastLossMillis: Int64?
    }

    /// What the writer holds under its lock.
    struct Writer: Sendable {
        /// What it read from its own directory; nil until first needed or after the folder
        /// failed (then the next write reads the directory again).
        var log: FolderOwnLog?
        /// What it remembers outside the folder, nil until loaded from the keeper; and the last
        /// value saved there.
        var state: FolderWriterState?
        var saved: FolderWriterState?
        /// The last time `checkOwnFiles` listed the own directory and found nothing lost: the
        /// watcher's `ownFilesToken` then, and when.
        var ownFilesChecked: (token: UInt64, at: ContinuousClock.Instant)?
    }

    /// A transport over the folder at `path` for `owner`'s envelopes, writing as `device`,
    /// remembering its own files through `keeper` (ferryd: in the store; by default only for
    /// the life of this value). Touches nothing yet; the folder is checked on each call.
    public init(name: String, path: String, owner: OwnerID, device: NodeID, options: Options = .init(),
                keeper: StateKeeper = .inMemory()) {
        self.name = name
        var trimmed = path
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
        self.path = trimmed
        self.owner = owner
        self.device = device
        self.options = options
        self.keeper = keeper
        ownerDirectory = trimmed + "/ferry-v1/" + owner.description
        ownDirectory = ownerDirectory + "/" + device.description
        watcher = FolderWatcher(ownDirectory: ownDirectory)
    }

    /// A push is one segment file, written and synced (two fsyncs): fewer, larger segments move
    /// records several times faster than the standard 400 per push, and a reader pages through
    /// them alike (a page holds up to `maxPageEnvelopes`).
    public var batchLimit: SyncLimits.Batch { SyncLimits.maxBatch }

    /// A user or the sync tool may delete any file in the folder, blobs included.
    public var blobsCanVanish: Bool { true }

    /// Writes the envelopes not stored yet as one new segment, durably, before answering.
    /// Envelopes of another owner are `.rejected`; ones this device wrote before `.duplicate`
    /// (by stream id and stamp: the event id is a keyed hash of the two). An envelope older
    /// than a version of its stream that this device wrote is `.accepted` and not written, as a
    /// relay answers it.
    /// Throws `.unavailable` when the folder is missing or not writable, and `.hostLostData`
    /// when files this device wrote and did not remove itself are gone from the folder (see
    /// `checkOwnFiles`): the engine then writes everything again. May compact afterwards; a
    /// failed compaction is reported by `status()`, not thrown.
    public func push(_ batch: [Envelope]) async throws(TransportFailure) -> [PushOutcome] {
        // File writes and fsyncs block: off the cooperative pool.
        try await Blocking.run { () throws(TransportFailure) in try self.pushNow(batch) }
    }

    private func pushNow(_ batch: [Envelope]) throws(TransportFailure) -> [PushOutcome] {
        try writer.withLock { (w: inout Writer) throws(TransportFailure) -> [PushOutcome] in
            var attempts = 0
            while true {
                var current = try openOwnLog(&w)
                // Held only here while it changes, so its tables are changed in place, not copied;
                // a failure below leaves it nil, which makes the next push read the directory again.
                w.log = nil
                var outcomes: [PushOutcome] = []
                outcomes.reserveCapacity(batch.count)
                // The file: its header (written last, once the body's length is known), then a
                // frame per new version.
                var file = FolderFileHeader.fileStart(bodyCapacity: batch.reduce(0) { $0 + Frame.size(of: $1) })
                var fresh = 0
                // The batch's new versions go into the log's stream table as they are accepted
                // (one lookup each, which also finds duplicates within the batch); a failure
                // below drops `current` with them.
                for envelope in batch {
                    if envelope.header.owner != owner {
                        outcomes.append(.rejected("the envelope belongs to owner \(envelope.header.owner); the folder transport \(name) carries owner \(owner)"))
                    } else if envelope.body.count > Envelope.maxBodyBytes {
                        outcomes.append(.rejected("too large for \(name): the envelope's body of \(envelope.body.count) bytes exceeds the limit of "
                            + "\(Envelope.maxBodyBytes) that every device reads; make the record smaller"))
                    } else {
                        switch current.noteIfNewer(envelope.header, size: Frame.size(of: envelope)) {
                        case .added:
                            Frame.append(envelope, to: &file)
                            fresh += 1
                            outcomes.append(.accepted)
                        case .sameVersion:
                            outcomes.append(.duplicate)
                        case .olderVersion:
                            // As a relay answers it: taken, and not kept (no reader would use it).
                            outcomes.append(.accepted)
                        }
                    }
                }
                guard fresh > 0 else {
                    w.log = current
                    try saveState(&w)
                    return outcomes
                }
                let seq = current.lastSeq + 1
                FolderFileHeader.finish(&file, kind: .segment, owner: owner, device: device, seq: seq)
                do throws(FolderIOError) {
                    // Never over a file already there: only another installation writing as this
                    // device (a cloned machine, a copied state directory) puts segments here, and a
                    // sync tool would carry the replacement to every device in place of its data.
                    try FolderIO.writeAtomically(file, dir: ownDirectory, name: FolderFileName.segmentName(seq),
                                                 tempTag: tempTag(), replacing: false)
                } catch where error.code == EEXIST && attempts < 3 {
                    attempts += 1
                    let now = options.wallClock()
                    health.withLock { h in
                        h.otherWriter = "segment \(seq) of this device (\(device)) was already in \(ownDirectory), written by another installation"
                        h.otherWriterMillis = now
                    }
                    continue  // the log is nil: read the directory again, and write above what is there
                } catch {
                    throw unavailable(error)  // the log stays nil: read the directory again next time
                }
                current.lastSeq = seq
                current.segments[seq] = UInt64(file.count)
                var state = w.state ?? FolderWriterState()
                // Seqs skipped (taken by a file that is not this device's, or by another
                // installation's) would be expected as lost segments: a snapshot at this seq
                // supersedes them and everything before, so none is expected.
                let skipped = seq > state.high + 1
                state.high = max(state.high, seq)
                if needsCompaction(current) || skipped {
                    if compact(&current) {
                        w.log = current
                        state.base = current.lastSeq
                        state.snapshot = current.lastSeq
                    }
                } else {
                    w.log = current
                }
                w.state = state
                // The segment is in place: a failure to remember it is thrown (the engine pushes
                // the batch again, which is all `duplicate` and saves then).
                try saveState(&w)
                return outcomes
            }
        }
    }

    /// Stops watching the folder.
    public func close() async {
        watcher.close()
    }

    /// Makes sure `PATH` is there and is a directory, without ever creating it.
    func checkFolder() throws(TransportFailure) {
        let found: (isDirectory: Bool, isRegular: Bool, size: Int, device: UInt64, inode: UInt64)?
        do { found = try FolderIO.kind(of: path) } catch { throw unavailable(error) }
        guard let found else {
            throw .unavailable("the folder \(path) is missing: \(String(cString: strerror(ENOENT))); check that it is mounted and writable")
        }
        guard found.isDirectory else {
            throw .unavailable("the folder \(path) is not a directory: \(String(cString: strerror(ENOTDIR))); check that it is mounted and writable")
        }
    }

    /// Creates `ferry-v1/<owner>/<device>` below the existing folder.
    func makeOwnDirectory() throws(TransportFailure) {
        try checkFolder()
        do throws(FolderIOError) {
            try FolderIO.makeDirectory(path + "/ferry-v1")
            try FolderIO.makeDirectory(ownerDirectory)
            try FolderIO.makeDirectory(ownDirectory)
        } catch {
            throw unavailable(error)
        }
    }

    /// The writer's log, read from the own directory when not loaded yet or when the directory
    /// is another one than the one it was read from, after checking that no file this device
    /// wrote is gone (`checkOwnFiles`, which throws `.hostLostData` if one is).
    /// Any failure forgets the log: a folder that comes back may hold other files, and the
    /// directory's inode number alone may be reused.
    func openOwnLog(_ w: inout Writer) throws(TransportFailure) -> FolderOwnLog {
        do {
            try makeOwnDirectory()
            try checkOwnFiles(&w)
        } catch {
            w.log = nil
            throw error
        }
        do throws(FolderIOError) {
            if let current = w.log, let now = try FolderIO.kind(of: ownDirectory),
               now.device == current.directory.device && now.inode == current.directory.inode {
                return current
            }
            var loaded = try FolderOwnLog.load(dir: ownDirectory, owner: owner, device: device)
            adopt(&loaded, into: &w)
            w.log = loaded
            return loaded
        } catch {
            w.log = nil
            throw unavailable(error)
        }
    }

    /// The `.unavailable` failure for a failed call on the folder, in the user's terms.
    func unavailable(_ error: FolderIOError) -> TransportFailure {
        let what: String
        switch error.code {
        case EROFS, EACCES, EPERM: what = "is not writable"
        case ENOENT, ENOTDIR: what = "is missing"
        case ENOSPC, EDQUOT: what = "is full"
        default: what = "failed (\(error.call) \(error.path))"
        }
        if error.code == EROFS { return .unavailable("the folder \(path) \(what): \(error.reason); \(ReadOnlyPath.advice(path))") }
        return .unavailable("the folder \(path) \(what): \(error.reason); check that it is mounted and writable")
    }

    /// A unique part for temporary file names: the time, the process and a random number.
    func tempTag() -> String {
        "\(options.wallClock())-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// Records frames that could not be read, for `status()`.
    func noteUnreadable(_ reasons: [String]) {
        guard !reasons.isEmpty else { return }
        health.withLock { h in
            h.corruptFrames += reasons.count
            h.lastCorrupt = reasons.last
            h.lastCorruptMillis = options.wallClock()
        }
    }
}
