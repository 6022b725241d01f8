import FerryStore
import Glibc
import FerryModel

extension FolderTransport {
    /// The most envelopes one page holds, whatever limit is asked for.
    static let maxPageEnvelopes = 10_000
    /// A page stops once its envelopes pass this many bytes (a few large envelopes).
    static let maxPageBytes = 16 << 20
    /// The most device directories read.
    static let maxDevices = FolderCursor.maxDevices
    /// The most names read from one directory.
    static let maxDirectoryEntries = 100_000

    /// Reads the other devices' envelopes after `cursor`, at most `limit` (see `Transport.pull`),
    /// and, once, this device's own files that its store never saw (found above what it
    /// remembered: the store was restored from an older backup, see `FolderWriterState.reread`).
    ///
    /// Per device it reads the newest snapshot when it supersedes segments the cursor has not
    /// consumed, then every segment the cursor has not consumed (late and out-of-order ones
    /// included), then conflict copies; it stops inside a file at the limit and keeps the
    /// offset, and keeps the offset of a file still arriving. Damaged frames are listed in
    /// `unreadable` and skipped. When nothing is new it waits for an inotify event or the poll
    /// interval, again until `wait` has passed or the task is cancelled.
    /// Throws `.rejected` for a cursor that is not this transport's, `.unavailable` when the
    /// folder is missing, `.hostLostData` when files this device wrote are gone from the folder
    /// or were found gone since the cursor was made (see `checkOwnFiles`).
    public func pull(after cursor: String?, limit: Int, wait: Duration) async throws(TransportFailure) -> PullPage {
        var progress: FolderCursor
        do {
            progress = try FolderCursor(parsing: cursor)
        } catch {
            throw .rejected("folder transport \(name): \(error)")
        }
        let limit = min(max(limit, 1), Self.maxPageEnvelopes)
        let deadline = ContinuousClock.now + wait
        while true {
            let generation = watcher.generation
            let before = progress
            let (page, after) = try await Blocking.run { () throws(TransportFailure) in
                var p = before
                let page = try self.scan(&p, limit: limit, cursor: cursor)
                return (page, p)
            }
            progress = after
            noteUnreadable(page.unreadable)
            if !page.envelopes.isEmpty || !page.unreadable.isEmpty || Task.isCancelled { return page }
            let now = ContinuousClock.now
            if now >= deadline { return page }
            await watcher.wait(since: generation, timeout: min(deadline - now, options.pollInterval))
            if Task.isCancelled { return page }
        }
    }

    /// One pass over the folder, for a pull after `cursor`.
    private func scan(_ progress: inout FolderCursor, limit: Int, cursor: String?) throws(TransportFailure) -> PullPage {
        try checkFolder()
        // Best effort, so there is a directory to watch; a read-only folder can still be read.
        try? makeOwnDirectory()
        let own = try checkBeforePull(cursor: cursor, progress: progress)
        if let own { progress.epoch = own.epoch }
        // The cursor's text is made once, when the page is done.
        var page = PullPage(envelopes: [], cursor: "", more: false)
        // Watched before it is listed, so that a device directory made after the listing still
        // wakes the wait (watched after, one made in between would wait for the poll).
        watcher.watch(ownerDirectory)
        let deviceNames: [String]
        do {
            deviceNames = try FolderIO.list(ownerDirectory, limit: Self.maxDirectoryEntries)
        } catch {
            if error.code == ENOENT {
                page.cursor = progress.text
                return page
            }
            throw unavailable(error)
        }
        var bytes = 0
        // This device's own directory is read for files its store never saw: segments and
        // snapshots only when it finds some (see `FolderWriterState.reread`), up to the last of
        // them, and until the cursor's entry for this device has passed that one; conflict
        // copies always (a clone of this device wrote them: see `readDevice`).
        var ownThrough: UInt64?
        if let reread = own?.reread {
            var entry = progress.devices[device.value] ?? FolderCursor.Device(floor: reread.after)
            // An entry kept only for conflict copies starts the read-back at its range.
            if entry.floor < reread.after { entry.supersede(through: reread.after) }
            if entry.floor < reread.through {
                ownThrough = reread.through
                progress.devices[device.value] = entry
            }
        }
        let devices = deviceNames.compactMap(FolderFileName.device).sorted().prefix(Self.maxDevices)
        for id in devices {
            var state = progress.devices[id] ?? FolderCursor.Device()
            let scope: DeviceScope = id != device.value ? .everything : ownThrough.map { .readBack(through: $0) } ?? .conflictCopies
            let full = try readDevice(NodeID(id), state: &state, into: &page, limit: limit, bytes: &bytes, scope: scope)
            if state != FolderCursor.Device() || progress.devices[id] != nil { progress.devices[id] = state }
            if full {
                page.more = true
                break
            }
        }
        page.cursor = progress.text
        return page
    }

    /// What of a device's directory a pull reads.
    enum DeviceScope: Equatable {
        /// Another device's: everything.
        case everything
        /// This device's own, read back after a restore: segments up to `through`, the newest
        /// snapshot, and conflict copies.
        case readBack(through: UInt64)
        /// This device's own otherwise: conflict copies only. A sync tool makes them when two
        /// installations write as this device (a clone, a copy of a backup): they hold what the
        /// other one wrote, which this store may not have.
        case conflictCopies
    }

    /// Reads one device's directory, within `scope`; true when the page filled up.
    private func readDevice(_ id: NodeID, state: inout FolderCursor.Device, into page: inout PullPage,
                            limit: Int, bytes: inout Int, scope: DeviceScope) throws(TransportFailure) -> Bool {
        let dir = ownerDirectory + "/" + id.description
        // Watched before it is listed, like the owner directory: a file renamed into place after
        // the listing wakes the wait.
        watcher.watch(dir)
        let names: [String]
        do {
            names = try FolderIO.list(dir, limit: Self.maxDirectoryEntries)
        } catch {
            if error.code == ENOENT || error.code == ENOTDIR { return false }
            throw unavailable(error)
        }
        var segments: [UInt64] = [], snapshots: [UInt64] = [], copies: [String] = []
        for name in names {
            switch (FolderFileName(name), scope) {
            case (.segment(let seq), .everything): segments.append(seq)
            case (.segment(let seq), .readBack(let through)): if seq <= through { segments.append(seq) }
            case (.snapshot(let seq), .everything), (.snapshot(let seq), .readBack): snapshots.append(seq)
            case (.conflictCopy, _): copies.append(name)
            default: break
            }
        }
        // Forget progress in files that are gone: if one comes back it is read again, which the
        // engine's merge makes harmless.
        let present = Set(names)
        state.partial = state.partial.filter { present.contains($0.key) }
        state.names.removeAll { !present.contains($0) }

        var full = false
        let visit = { (envelope: Envelope) -> Bool in
            page.envelopes.append(envelope)
            bytes += envelope.body.count + EnvelopeHeader.encodedSize
            full = page.envelopes.count >= limit || bytes >= Self.maxPageBytes
            return !full
        }
        var unreadable: [String] = []

        // The newest snapshot, when it supersedes a segment not consumed yet (one that may have
        // been deleted by the compaction that wrote the snapshot).
        if let snap = snapshots.filter({ !state.names.contains(FolderFileName.snapshotName($0)) }).max(),
           snap > state.floor, UInt64(state.ahead.filter { $0 <= snap }.count) < snap - state.floor {
            let file = FolderFileName.snapshotName(snap)
            let outcome = try scanFile(dir, file, id, .init(kind: .snapshot, owner: owner, device: id, seq: snap), state.partial[file] ?? 0, visit, &unreadable)
            switch outcome {
            case .gone, .notAFile: break
            case .badHeader(let why):
                unreadable.append(why)
                state.names.append(file)
            case .progressed(let offset, let finished):
                if finished {
                    state.supersede(through: snap)
                    state.partial = state.partial.filter { key, _ in
                        switch FolderFileName(key) {
                        case .segment(let s), .snapshot(let s): s > snap
                        default: true
                        }
                    }
                } else if offset > 0 {
                    state.partial[file] = offset
                }
            }
        }
        // Segments not consumed, in order, late arrivals included.
        for seq in segments.sorted() where !full && !state.consumed(segment: seq) {
            let file = FolderFileName.segmentName(seq)
            let outcome = try scanFile(dir, file, id, .init(kind: .segment, owner: owner, device: id, seq: seq), state.partial[file] ?? 0, visit, &unreadable)
            switch outcome {
            case .gone, .notAFile: state.partial[file] = nil
            case .badHeader(let why):
                unreadable.append(why)
                state.consumeSegment(seq)
                state.partial[file] = nil
            case .progressed(let offset, let finished):
                if finished {
                    state.consumeSegment(seq)
                    state.partial[file] = nil
                } else if offset > 0 {
                    state.partial[file] = offset
                }
            }
        }
        // Conflict copies: extra sources, read once each.
        for file in copies.sorted() where !full && !state.names.contains(file) && state.names.count < FolderCursor.maxNames {
            let outcome = try scanFile(dir, file, id, .init(kind: nil, owner: owner, device: id, seq: nil), state.partial[file] ?? 0, visit, &unreadable)
            switch outcome {
            case .gone, .notAFile: state.partial[file] = nil
            case .badHeader(let why):
                unreadable.append(why)
                state.names.append(file)
            case .progressed(let offset, let finished):
                if finished {
                    state.names.append(file)
                    state.partial[file] = nil
                } else if offset > 0 && state.partial.count < FolderCursor.maxNames {
                    state.partial[file] = offset
                }
            }
        }
        // A segment that never arrives (deleted by hand) holds the floor; past the cap, give it
        // up so the cursor stays bounded, and say so.
        while state.ahead.count > FolderCursor.maxPending, let first = state.ahead.first {
            unreadable.append("\(id)/: segments \(state.floor + 1) to \(first - 1) never arrived; skipped")
            state.supersede(through: first)
        }
        page.unreadable += unreadable
        return full
    }

    private func scanFile(_ dir: String, _ file: String, _ id: NodeID, _ expect: FolderFileReader.Expectation, _ offset: UInt64,
                          _ visit: (Envelope) -> Bool, _ unreadable: inout [String]) throws(TransportFailure) -> FolderFileReader.Outcome {
        var found: [String] = []
        var stopped = false
        let label = "\(id)/\(file)"
        do {
            let outcome = try FolderFileReader.scan(path: dir + "/" + file, label: label, from: offset, expect: expect,
                                                    visit: { envelope in
                                                        let goOn = visit(envelope)
                                                        if !goOn { stopped = true }
                                                        return goOn
                                                    }, unreadable: { found.append($0) })
            unreadable += found
            // A file that ends before its header says (and not because the page filled up) is
            // waited for; status() tells when one keeps the rest of its records back too long.
            let incomplete: Bool
            if case .progressed(_, let finished) = outcome { incomplete = !finished && !stopped } else { incomplete = false }
            let now = incomplete ? options.wallClock() : 0
            health.withLock { h in
                if !incomplete {
                    h.incompleteSince[label] = nil
                } else if h.incompleteSince[label] == nil && h.incompleteSince.count < 1000 {
                    h.incompleteSince[label] = now
                }
            }
            if case .notAFile(let why) = outcome {
                // Not there as far as reading goes (read once it is a file), told once.
                if health.withLock({ $0.notAFile.insert(dir + "/" + file).inserted }) { unreadable.append(why) }
                return .gone
            }
            return outcome
        } catch {
            unreadable += found
            if error.code == ENOENT { return .gone }
            throw unavailable(error)
        }
    }
}
