import FerryModel
import Glibc
import Synchronization

extension FolderTransport {
    /// Where the writer keeps its `FolderWriterState`: outside the folder, so that losing the
    /// folder's files cannot take what it remembers along. ferryd keeps it in the store, as the
    /// progress value `key` (`folder-writer:<own directory>`) of the transport's space, which
    /// outlives starting the transport over and removing it. `load` answers nil for a key never
    /// saved.
    public struct StateKeeper: Sendable {
        public var load: @Sendable (_ key: String) throws(TransportFailure) -> String?
        public var save: @Sendable (_ key: String, _ value: String) throws(TransportFailure) -> Void

        public init(load: @escaping @Sendable (_ key: String) throws(TransportFailure) -> String?,
                    save: @escaping @Sendable (_ key: String, _ value: String) throws(TransportFailure) -> Void) {
            self.load = load
            self.save = save
        }

        /// A keeper that remembers only for the life of the process (tests, tools).
        public static func inMemory() -> StateKeeper {
            let values = MemoryValues()
            return StateKeeper(load: { key in values.get(key) }, save: { key, value in values.set(key, value) })
        }
    }

    /// The key under which the writer's state is kept: one per own directory, so another
    /// folder (or owner) starts from nothing.
    var stateKey: String { "folder-writer:" + ownDirectory }

    /// The writer's state, loaded from the keeper the first time. A value that does not parse
    /// (not written by this build) counts as a device that never wrote; it is replaced at the
    /// next save.
    func state(_ w: inout Writer) throws(TransportFailure) -> FolderWriterState {
        if let state = w.state { return state }
        let text = try keeper.load(stateKey)
        let state = (try? FolderWriterState(parsing: text)) ?? FolderWriterState()
        w.state = state
        w.saved = text == nil ? nil : state
        return state
    }

    /// Saves the writer's state when it changed since it was last saved.
    func saveState(_ w: inout Writer) throws(TransportFailure) {
        guard let state = w.state, state != w.saved else { return }
        try keeper.save(stateKey, state.text)
        w.saved = state
    }

    /// Takes what a freshly read log shows into the state: seqs above the remembered ones (a
    /// crash before the state was saved, or a newer copy of this device: the store was restored
    /// from an older backup) are never used again, and the files holding them are to be read
    /// back (`FolderWriterState.reread`), since the store may not have their envelopes; a newer
    /// snapshot is expected from now on. Never lowers what the state remembers: the next seq is
    /// above both.
    func adopt(_ log: inout FolderOwnLog, into w: inout Writer) {
        guard var state = w.state else { return }
        state.adopt(diskHigh: log.ownHigh)
        state.taken = max(state.taken, log.foreignHigh)
        if let snap = log.snapshot, snap.seq > state.base {
            state.base = snap.seq
            state.snapshot = snap.seq
        }
        log.lastSeq = max(log.lastSeq, state.highestUsed)
        w.state = state
        // Best effort: remembering more only makes the check stricter, and the files to read
        // back are kept in memory meanwhile (and found again at the next start if never saved).
        try? saveState(&w)
    }

    /// Checks that every file this device wrote into its directory and did not remove itself
    /// (by compaction) is still there, and no shorter than this process knows it (`cutShort`).
    /// The folder itself is there (checked before): when the directory or such a file is gone
    /// or cut short, the sync tool synced a deletion (a user cleared the folder or deleted a
    /// file) or a shortened copy, so the folder lost data that other devices may never have
    /// read. Then the writer starts its directory over, above every seq it ever used: its
    /// surviving files are compacted into one snapshot `snap-R` (R above every seq used), which
    /// supersedes every older seq for the readers; it remembers a new epoch; and it throws
    /// `.hostLostData`, so the engine queues every record again and they are written anew.
    /// A folder that is missing as a whole (unmounted) is `.unavailable` and never comes here.
    ///
    /// The directory is listed again only when the watcher saw something that may have removed
    /// a file (`FolderWatcher.ownFilesToken`) or `options.ownFilesRecheck` has passed since the last
    /// listing; without inotify, every time.
    func checkOwnFiles(_ w: inout Writer) throws(TransportFailure) {
        var state = try state(&w)
        guard state.high > 0 else { return }
        // Watched before the listing, so that a deletion after it changes the token.
        watcher.watch(ownDirectory)
        let token = watcher.ownFilesToken()
        let now = ContinuousClock.now
        if let token, let last = w.ownFilesChecked, last.token == token, now - last.at < options.ownFilesRecheck { return }
        w.ownFilesChecked = nil
        let names: [String]?
        do {
            names = try FolderIO.list(ownDirectory, limit: Self.maxDirectoryEntries)
        } catch {
            if error.code != ENOENT && error.code != ENOTDIR { throw unavailable(error) }
            names = nil
        }
        guard let why = state.lost(names: names) ?? cutShort(w.log, names: names) else {
            if let token { w.ownFilesChecked = (token, now) }
            return
        }

        // Above every seq used: the remembered ones and any on disk.
        var top = state.highestUsed
        for name in names ?? [] {
            switch FolderFileName(name) {
            case .segment(let seq), .snapshot(let seq): top = max(top, seq)
            case .conflictCopy, .ignored: break
            }
        }
        guard top < UInt64.max else { throw .rejected("the folder transport \(name) has used every seq in \(ownDirectory)") }
        let reset = top + 1
        // Remembered first: a crash after this still reports the loss (the cursor's epoch is
        // older); the new snapshot is expected only once it is in place.
        // Own files still to be read back stay so: `snap-R` keeps what survives of them.
        state = FolderWriterState(high: reset, base: reset, snapshot: 0, epoch: state.epoch + 1, reread: state.reread,
                                  taken: state.taken)
        w.state = state
        w.log = nil
        try saveState(&w)
        let message = "the folder \(path) lost files this device wrote: \(why); they were deleted (by a user or the sync tool), so every record is written into it again"
        health.withLock { h in
            h.lastLoss = message
            h.lastLossMillis = options.wallClock()
        }
        do throws(FolderIOError) {
            try FolderIO.makeDirectory(path + "/ferry-v1")
            try FolderIO.makeDirectory(ownerDirectory)
            try FolderIO.makeDirectory(ownDirectory)
            var log = try FolderOwnLog.load(dir: ownDirectory, owner: owner, device: device)
            log.lastSeq = reset
            try writeSnapshot(&log)
            w.log = log
            w.state?.snapshot = reset
            try? saveState(&w)
        } catch {
            // The loss is remembered (a new epoch): it is reported by the next pull anyway.
            throw unavailable(error)
        }
        throw .hostLostData(message)
    }

    /// An own file shorter on disk than this process knows it (as it wrote it, or as it found
    /// it when the log was loaded): the sync tool put a shortened copy in its place (a transfer
    /// cut short elsewhere, a full disk on another device). This device's files are written
    /// once and never change, so the rest of it will not come, and a device that had not read
    /// it yet would lack its records for good. It is a loss like a deleted file. Nil when none.
    func cutShort(_ log: FolderOwnLog?, names: [String]?) -> String? {
        guard let log, let names else { return nil }
        var known: [(name: String, bytes: UInt64)] = log.segments.map { (FolderFileName.segmentName($0.key), $0.value) }
        if let snap = log.snapshot, snap.bytes > 0 { known.append((FolderFileName.snapshotName(snap.seq), snap.bytes)) }
        guard !known.isEmpty else { return nil }
        let present = Set(names)
        for file in known.sorted(by: { $0.name < $1.name }) where present.contains(file.name) {
            guard let now = try? FolderIO.kind(of: ownDirectory + "/" + file.name), now.isRegular else { continue }
            if UInt64(now.size) < file.bytes {
                return "its file \(file.name) was cut short (\(now.size) of its \(file.bytes) bytes are left): the sync tool put a shortened copy in its place"
            }
        }
        return nil
    }

    /// What a pull learns from the writer's state: the epoch for the new cursor, and which of
    /// this device's own files are to be read back (`FolderWriterState.reread`).
    struct OwnFilesForPull: Sendable {
        var epoch: UInt64
        var reread: FolderWriterState.Reread?
    }

    /// For a pull after `cursor`: checks this device's own files (best effort: a folder that
    /// cannot be written is still read) and reads them once (so their seqs are remembered, and
    /// files above what the store remembered are found: those are to be read back), and checks
    /// that the cursor is of the current epoch. A cursor made before the writer last found its
    /// files lost means the engine has not started the transport over since (it crashed in
    /// between): `.hostLostData` again. Returns the epoch for the new cursor and the own files
    /// to read back; nil when the state cannot be read (the cursor keeps its own epoch).
    func checkBeforePull(cursor: String?, progress: FolderCursor) throws(TransportFailure) -> OwnFilesForPull? {
        try writer.withLock { (w: inout Writer) throws(TransportFailure) -> OwnFilesForPull? in
            do throws(TransportFailure) {
                try checkOwnFiles(&w)
            } catch {
                if case .hostLostData = error { throw error }
            }
            // Read once, so the seqs on disk are remembered before anything can delete them
            // (a device that only reads, or a first start after an upgrade or a restore).
            if w.log == nil { _ = try? openOwnLog(&w) }
            guard let state = w.state else { return nil }
            if let cursor, !cursor.isEmpty, progress.epoch != state.epoch {
                let found = health.withLock { $0.lastLoss }
                throw .hostLostData(found ?? "the folder \(path) lost files this device wrote (found before the transport was started over); every record is written into it again")
            }
            return OwnFilesForPull(epoch: state.epoch, reread: state.reread)
        }
    }
}

/// The values of `FolderTransport.StateKeeper.inMemory()`.
private final class MemoryValues: Sendable {
    private let values = Mutex<[String: String]>([:])
    func get(_ key: String) -> String? { values.withLock { $0[key] } }
    func set(_ key: String, _ value: String) { values.withLock { $0[key] = value } }
}
