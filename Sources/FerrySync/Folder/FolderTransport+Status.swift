import Glibc

extension FolderTransport {
    /// The folder's state: `unavailable` (missing, not a directory), `read-only`,
    /// `incomplete-files` (a file has ended before its header says for 10 minutes: what is
    /// after the end waits), `duplicate-device` (for an hour after another installation writing as this device was
    /// seen: a segment name this one was about to write was taken), `corrupt-frames`
    /// (for `corruptFramesWindowMillis` after damaged frames were last skipped: the count and the
    /// last one), `compaction-failed`, or `ok`; and the figures
    /// `devices`, `segments`, `snapshots` and `bytes` over every device, plus `watch`
    /// (`inotify` or `poll`), and `last-lost-files` (with `last-lost-files-ms`) once this device
    /// found files it wrote gone from the folder.
    public func status() async -> TransportStatus {
        var details: [String: String] = [:]
        do {
            try checkFolder()
        } catch {
            return TransportStatus(state: "unavailable", message: error.message, details: details)
        }
        var devices = 0, segments = 0, snapshots = 0, bytes = 0
        var present = Set<String>()
        if let names = try? FolderIO.list(ownerDirectory, limit: Self.maxDirectoryEntries) {
            for name in names where FolderFileName.device(name) != nil {
                devices += 1
                let dir = ownerDirectory + "/" + name
                for file in (try? FolderIO.list(dir, limit: Self.maxDirectoryEntries)) ?? [] {
                    present.insert(name + "/" + file)
                    switch FolderFileName(file) {
                    case .segment, .conflictCopy: segments += 1
                    case .snapshot: snapshots += 1
                    case .ignored: continue
                    }
                    bytes += (try? FolderIO.kind(of: dir + "/" + file))??.size ?? 0
                }
            }
        }
        details["devices"] = String(devices)
        details["segments"] = String(segments)
        details["snapshots"] = String(snapshots)
        details["bytes"] = String(bytes)
        details["watch"] = watcher.isAvailable ? "inotify" : "poll"
        let h = health.withLock { $0 }
        details["corrupt-frames"] = String(h.corruptFrames)
        if let when = h.lastCorruptMillis { details["last-corrupt-frame-ms"] = String(when) }
        details["compactions"] = String(h.compactions)
        if let when = h.lastCompactionMillis { details["last-compaction-ms"] = String(when) }
        if let lost = h.lastLoss { details["last-lost-files"] = lost }
        if let when = h.lastLossMillis { details["last-lost-files-ms"] = String(when) }

        if let code = writableProblem() {
            let advice = code == EROFS ? ReadOnlyPath.advice(path) : "check that it is mounted and writable"
            return TransportStatus(state: "read-only", message: "the folder \(path) is not writable: \(String(cString: strerror(code))); \(advice)",
                                   details: details)
        }
        if let failed = h.compactionError {
            return TransportStatus(state: "compaction-failed", message: failed, details: details)
        }
        // Files still there (one since removed or replaced by compaction waits for nothing).
        let incomplete = h.incompleteSince.filter { present.contains($0.key) }
        if let (file, since) = incomplete.min(by: { ($0.value, $0.key) < ($1.value, $1.key) }),
           options.wallClock() - since >= Self.incompleteWaitMillis {
            details["incomplete-files"] = String(incomplete.count)
            let minutes = (options.wallClock() - since) / 60_000
            return TransportStatus(state: "incomplete-files", message: "\(incomplete.count) file(s) in the folder end before their "
                + "header says, the oldest \(file) for \(minutes) min: the records in the missing part wait for it; check that the "
                + "sync tool is running and has room to finish the file on this machine", details: details)
        }
        if let when = h.otherWriterMillis, options.wallClock() - when < Self.corruptFramesWindowMillis {
            return TransportStatus(state: "duplicate-device", message: "\(h.otherWriter ?? "another installation writes as this device"): "
                + "a copy of this device (a cloned machine, or a state directory copied on this machine) runs too, and the two reach "
                + "each other's writes only when one finds a file name taken; give each machine its own /etc/machine-id (systemd-machine-id-setup) "
                + "and restart ferryd there, or remove the copy's state directory, so that each writes as a device of its own", details: details)
        }
        // A damaged frame is skipped once; its record comes again in a later segment or snapshot
        // of its writer. So it is what is wrong for a while, not for the life of the process.
        if let when = h.lastCorruptMillis, options.wallClock() - when < Self.corruptFramesWindowMillis {
            return TransportStatus(state: "corrupt-frames", message: "\(h.corruptFrames) damaged frame(s) or odd file(s) skipped since ferryd started "
                + "(a sync tool or the disk damaged them, or something not written by Ferry is under a Ferry name); the last: \(h.lastCorrupt ?? "?")", details: details)
        }
        return TransportStatus(state: "ok", details: details)
    }

    /// How long a file may end before its header says before status() calls it a problem.
    static let incompleteWaitMillis: Int64 = 600_000

    /// How long after damaged frames were last skipped the state stays `corrupt-frames` (and
    /// after another installation was seen, `duplicate-device`).
    static let corruptFramesWindowMillis: Int64 = 3_600_000

    /// Why this device cannot write into its directory (an errno: `EROFS` for a read-only
    /// mount), or nil. `access` alone would let root pass on a read-only mount, so the mount
    /// flag is checked too.
    private func writableProblem() -> Int32? {
        let target = (try? FolderIO.kind(of: ownDirectory)) ?? nil != nil ? ownDirectory : path
        var vfs = statvfs()
        if statvfs(target, &vfs) == 0 && vfs.f_flag & UInt(ST_RDONLY) != 0 { return EROFS }
        if access(target, W_OK) != 0 { return errno }
        return nil
    }
}
