import FerryModel

extension FolderTransport {
    /// Whether this device's files have grown enough to replace them by a snapshot: more than
    /// `maxSegments` segments, or (above `minimumCompactionBytes`) more than `growthFactor`
    /// times the size of the last snapshot.
    func needsCompaction(_ log: FolderOwnLog) -> Bool {
        if log.segments.count > options.maxSegments { return true }
        let total = log.segmentBytes + (log.snapshot?.bytes ?? 0)
        guard total >= UInt64(options.minimumCompactionBytes) else { return false }
        return Double(log.garbageBytes) >= options.garbageRatio * Double(max(log.liveBytes, 1))
    }

    /// Replaces this device's segments and snapshot by one snapshot holding the newest envelope
    /// of each stream (tombstones included), superseding every segment up to `log.lastSeq`.
    /// The snapshot is in place (renamed, directory synced) before anything is deleted, so a
    /// reader always finds either the segments or the snapshot. Failures are kept for `status()`;
    /// false then, and the caller reads the directory again before the next write.
    func compact(_ log: inout FolderOwnLog) -> Bool {
        do {
            try writeSnapshot(&log)
            health.withLock { h in
                h.compactionError = nil
                h.compactions += 1
                h.lastCompactionMillis = options.wallClock()
            }
            return true
        } catch {
            health.withLock { $0.compactionError = "compacting \(ownDirectory) failed: \(error)" }
            return false
        }
    }

    /// Writes `snap-<log.lastSeq>` holding the newest envelope per stream of `log`'s files, then
    /// removes those files; `log` then describes the snapshot alone.
    func writeSnapshot(_ log: inout FolderOwnLog) throws(FolderIOError) {
        var latest: [StreamID: Envelope] = [:]
        var files: [(String, FolderFileHeader.Kind, UInt64)] = []
        if let snap = log.snapshot { files.append((FolderFileName.snapshotName(snap.seq), .snapshot, snap.seq)) }
        files += log.segments.keys.sorted().map { (FolderFileName.segmentName($0), .segment, $0) }
        for (file, kind, seq) in files {
            _ = try FolderFileReader.scan(
                path: ownDirectory + "/" + file, label: file, from: 0,
                expect: .init(kind: kind, owner: owner, device: device, seq: seq),
                visit: { envelope in
                    let stream = envelope.header.stream
                    if let kept = latest[stream], kept.header.stamp >= envelope.header.stamp { return true }
                    latest[stream] = envelope
                    return true
                },
                unreadable: { _ in })
        }
        // A stable order (by stamp, then stream) so equal contents give equal files.
        let kept = latest.values.sorted { ($0.header.stamp, $0.header.stream) < ($1.header.stamp, $1.header.stream) }
        // The file: its header (written once the body's length is known), then the frames.
        var file = FolderFileHeader.fileStart(bodyCapacity: kept.reduce(0) { $0 + Frame.size(of: $1) })
        for envelope in kept { Frame.append(envelope, to: &file) }
        let seq = log.lastSeq
        FolderFileHeader.finish(&file, kind: .snapshot, owner: owner, device: device, seq: seq)
        try FolderIO.writeAtomically(file, dir: ownDirectory, name: FolderFileName.snapshotName(seq), tempTag: tempTag())
        if let old = log.snapshot, old.seq != seq { try FolderIO.remove(ownDirectory + "/" + FolderFileName.snapshotName(old.seq)) }
        for s in log.segments.keys { try FolderIO.remove(ownDirectory + "/" + FolderFileName.segmentName(s)) }
        try FolderIO.syncDirectory(ownDirectory)
        log.snapshot = (seq, UInt64(file.count))
        log.segments = [:]
        log.streams.removeAll()
        log.liveBytes = 0
        log.garbageBytes = 0
        for envelope in kept { log.note(envelope.header, size: Frame.size(of: envelope)) }
    }
}
