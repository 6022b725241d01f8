import FerrySQLite
import FerrySync

extension SQLiteRelayStorage {
    public func push(_ owner: OwnerID, events: [IncomingEvent], quotaBytes defaultQuota: Int64, now: Int64) throws(RelayStorageError) -> [PushOutcome] {
        try pushGroup.submit(PushGroup.Job(owner: owner, events: events, quota: defaultQuota, now: now)) { jobs in
            self.commitGroup(jobs)
        }
    }

    /// Stores the pushes of one group in one transaction (one sync to disk for all of them),
    /// each in a savepoint of its own, so one that fails (over its quota) changes nothing and
    /// the others still commit. A push alone in its group needs no savepoint: when it fails,
    /// the transaction is rolled back. (A savepoint keeps the first image of every page it
    /// changes, in memory: up to some 20 MB for a push of 2,000 events, and a copy per page.)
    private func commitGroup(_ jobs: [PushGroup.Job]) {
        lock.lock(); defer { lock.unlock() }
        do {
            try db.execute("BEGIN IMMEDIATE")
        } catch {
            for job in jobs { job.result = .failure(.database(context: "storing events", message: "\(error)")) }
            return
        }
        let alone = jobs.count == 1
        for job in jobs {
            do {
                if !alone { try db.execute("SAVEPOINT push") }
                let outcomes = try pushUnlocked(job.owner, events: job.events, quotaBytes: job.quota, now: job.now)
                if !alone { try db.execute("RELEASE push") }
                job.result = .success(outcomes)
            } catch {
                if alone {
                    try? db.execute("ROLLBACK")
                } else {
                    try? db.execute("ROLLBACK TO push")
                    try? db.execute("RELEASE push")
                }
                job.result = .failure((error as? RelayStorageError) ?? .database(context: "storing events", message: "\(error)"))
                if alone { return }
            }
        }
        do {
            try db.execute("COMMIT")
            logWatch.afterCommit()
        } catch {
            try? db.execute("ROLLBACK")
            for job in jobs { job.result = .failure(.database(context: "storing events", message: "\(error)")) }
        }
    }

    private func pushUnlocked(_ owner: OwnerID, events: [IncomingEvent], quotaBytes defaultQuota: Int64, now: Int64) throws -> [PushOutcome] {
        do {
            guard let before = try usageUnlocked(owner) else { throw RelayStorageError.unknownOwner(owner) }
            let ownerBytes = owner.bytes
            let seqQuery = try db.cached("SELECT next_seq, oid FROM owners WHERE owner = ?")
            seqQuery.bind(1, blob: ownerBytes)
            guard try seqQuery.step() else { throw RelayStorageError.unknownOwner(owner) }
            var nextSeq = seqQuery.int64(0)
            let oid = seqQuery.int64(1)
            seqQuery.resetKeepingBindings()

            var outcomes: [PushOutcome] = []
            var addedEvents: Int64 = 0, addedBytes: Int64 = 0
            let byEvent = try db.cached("SELECT 1 FROM events WHERE oid = ? AND event = ?")
            let byStream = try db.cached("SELECT id, stamp, length(data) FROM events WHERE oid = ? AND stream = ?")
            // A newer version of a stream takes its row in place: the table row and the (owner,
            // stream) entry stay, only the seq and event entries move (a delete and an insert
            // would touch every index twice).
            let replace = try db.cached("""
                UPDATE events SET seq = ?, event = ?, stamp = ?, deleted = ?, stored_at = ?, data = ? WHERE id = ?
                """)
            // OR IGNORE: a new stream's event id already stored under another stream (a device
            // reusing ids) is a duplicate, not a failed batch.
            let insert = try db.cached("""
                INSERT OR IGNORE INTO events(oid, seq, event, stream, stamp, deleted, stored_at, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """)
            // One lookup by stream decides most events: a stream seen before holds this very
            // version (a duplicate: the event id is derived from stream and stamp), a newer one
            // (superseded, unless the event id is stored: a duplicate) or an older one
            // (replaced, unless the event id is stored). Only a version that is not the stored
            // one also checks the event id, before anything changes.
            for e in events {
                byStream.bind(1, oid); byStream.bind(2, blob: e.stream.bytes)
                if try byStream.step() {
                    let id = byStream.int64(0)
                    let stamp = byStream.bytes(1) ?? []
                    let size = byStream.int64(2)
                    byStream.resetKeepingBindings()
                    // Same stamp: the same version.
                    if stamp == e.stampKey { outcomes.append(.duplicate); continue }
                    // An event id stored already is a duplicate before anything else (as on
                    // PostgreSQL), also when the stream holds a newer version.
                    byEvent.bind(1, oid); byEvent.bind(2, blob: e.event.bytes)
                    let known = try byEvent.step()
                    byEvent.resetKeepingBindings()
                    if known { outcomes.append(.duplicate); continue }
                    if e.stampKey.lexicographicallyPrecedes(stamp) { outcomes.append(.superseded); continue }
                    replace.bind(1, nextSeq); replace.bind(2, blob: e.event.bytes); replace.bind(3, blob: e.stampKey)
                    replace.bind(4, e.deleted); replace.bind(5, now); replace.bind(6, blob: e.bytes); replace.bind(7, id)
                    try replace.run()
                    nextSeq += 1
                    addedBytes += Int64(e.bytes.count) - size
                    outcomes.append(.stored)
                    continue
                } else {
                    byStream.resetKeepingBindings()
                }
                insert.bind(1, oid); insert.bind(2, nextSeq); insert.bind(3, blob: e.event.bytes)
                insert.bind(4, blob: e.stream.bytes); insert.bind(5, blob: e.stampKey); insert.bind(6, e.deleted)
                insert.bind(7, now); insert.bind(8, blob: e.bytes)
                try insert.run()
                guard db.changes > 0 else { outcomes.append(.duplicate); continue }
                nextSeq += 1
                addedEvents += 1; addedBytes += Int64(e.bytes.count)
                outcomes.append(.stored)
            }
            let quota = before.quotaOverride ?? defaultQuota
            if addedBytes > 0, before.usedBytes + addedBytes > quota {
                throw RelayStorageError.quotaExceeded(quotaBytes: quota, usedBytes: before.usedBytes, neededBytes: addedBytes)
            }
            let update = try db.cached("""
                UPDATE owners SET next_seq = ?, events = events + ?, event_bytes = event_bytes + ?, last_push_at = ? WHERE owner = ?
                """)
            update.bind(1, nextSeq); update.bind(2, addedEvents); update.bind(3, addedBytes); update.bind(4, now)
            update.bind(5, blob: ownerBytes)
            try update.run()
            return outcomes
        }
    }

    public func pull(_ owner: OwnerID, after cursor: Cursor, limit: Int, maxBytes: Int) throws(RelayStorageError) -> EventPage {
        try locked("reading events") {
            // The owner's numbering; (1, 0) for an owner with no row, which holds nothing.
            let head = try db.cached("SELECT next_seq, cursor_offset, oid FROM owners WHERE owner = ?")
            head.bind(1, blob: owner.bytes)
            let known = try head.step()
            let (nextSeq, offset, oid) = known ? (head.int64(0), head.int64(1), head.int64(2)) : (1, 0, 0)
            head.resetKeepingBindings()
            var after: Int64 = 0
            if cursor > .start {
                guard cursor.sequence >= offset else {
                    throw RelayStorageError.cursorLost(owner: owner, cursor: cursor, why: .beforeRestore(lowest: Cursor(offset)))
                }
                after = cursor.sequence - offset
                if after >= nextSeq {
                    let newest = Cursor(offset + nextSeq - 1)
                    guard Cursor.couldFollowRestore(cursor, newest: newest) else {
                        throw RelayStorageError.cursorNeverIssued(owner: owner, cursor: cursor, newest: newest)
                    }
                    // Restored from an older backup: every cursor handed out before goes.
                    if known {
                        guard let moved = Cursor.offsetAfterRestore(offset: offset, nextSeq: nextSeq) else {
                            throw RelayStorageError.database(context: "renumbering cursors", message: "the owner's cursor numbers are used up")
                        }
                        let u = try db.cached("UPDATE owners SET cursor_offset = ? WHERE owner = ?")
                        u.bind(1, moved); u.bind(2, blob: owner.bytes)
                        try u.run()
                    }
                    throw RelayStorageError.cursorLost(owner: owner, cursor: cursor, why: .ahead(newest: Cursor(offset + nextSeq - 1)))
                }
            }
            let s = try db.cached("SELECT seq, data FROM events WHERE oid = ? AND seq > ? ORDER BY seq LIMIT ?")
            s.bind(1, oid); s.bind(2, after); s.bind(3, limit + 1)
            defer { s.resetKeepingBindings() }
            var events: [[UInt8]] = []
            var last = cursor
            var bytes = 0
            var more = false
            while try s.step() {
                let data = s.bytes(1) ?? []
                if events.count == limit || (!events.isEmpty && bytes + data.count > maxBytes) {
                    more = true
                    break
                }
                events.append(data)
                bytes += data.count
                last = Cursor(s.int64(0) + offset)
            }
            return EventPage(events: events, cursor: last, more: more)
        }
    }

    public func dropTombstones(storedBefore: Int64) throws(RelayStorageError) -> Int {
        try locked("dropping tombstones", write: true) {
            let s = try db.cached("""
                DELETE FROM events WHERE deleted = 1 AND stored_at < ? RETURNING oid, length(data)
                """)
            s.bind(1, storedBefore)
            var freed: [Int64: (count: Int64, bytes: Int64)] = [:]
            var total = 0
            while try s.step() {
                let oid = s.int64(0)
                freed[oid, default: (0, 0)].count += 1
                freed[oid, default: (0, 0)].bytes += s.int64(1)
                total += 1
            }
            s.resetKeepingBindings()
            let u = try db.cached("UPDATE owners SET events = events - ?, event_bytes = event_bytes - ? WHERE oid = ?")
            for (oid, f) in freed {
                u.bind(1, f.count); u.bind(2, f.bytes); u.bind(3, oid)
                try u.run()
            }
            return total
        }
    }

    public func blobSize(_ owner: OwnerID, key: String, touching now: Int64?) throws(RelayStorageError) -> Int64? {
        guard let now else {
            return try locked("reading a blob record") {
                let s = try db.cached("SELECT size FROM blobs WHERE owner = ? AND key = ?")
                s.bind(1, blob: owner.bytes); s.bind(2, key)
                defer { s.resetKeepingBindings() }
                return try s.step() ? s.int64(0) : nil
            }
        }
        return try locked("reading a blob record", write: true) {
            let s = try db.cached("UPDATE blobs SET used_at = max(used_at, ?) WHERE owner = ? AND key = ? RETURNING size")
            s.bind(1, now); s.bind(2, blob: owner.bytes); s.bind(3, key)
            defer { s.resetKeepingBindings() }
            let size = try s.step() ? s.int64(0) : nil
            if size != nil { while try s.step() {} }
            return size
        }
    }

    public func deleteBlob(_ owner: OwnerID, key: String, usedSince: Int64) throws(RelayStorageError) -> RelayBlobDeletion {
        try locked("removing a blob record", write: true) {
            let s = try db.cached("SELECT size, used_at FROM blobs WHERE owner = ? AND key = ?")
            s.bind(1, blob: owner.bytes); s.bind(2, key)
            guard try s.step() else {
                s.resetKeepingBindings()
                return .absent
            }
            let (size, used) = (s.int64(0), s.int64(1))
            s.resetKeepingBindings()
            if used >= usedSince { return .inUse(lastUsed: used) }
            let d = try db.cached("DELETE FROM blobs WHERE owner = ? AND key = ?")
            d.bind(1, blob: owner.bytes); d.bind(2, key)
            try d.run()
            let u = try db.cached("UPDATE owners SET blobs = blobs - 1, blob_bytes = blob_bytes - ? WHERE owner = ?")
            u.bind(1, size); u.bind(2, blob: owner.bytes)
            try u.run()
            return .deleted(size: size)
        }
    }

    public func addBlob(_ owner: OwnerID, key: String, size: Int64, quotaBytes defaultQuota: Int64, now: Int64) throws(RelayStorageError) -> Bool {
        try locked("recording a blob", write: true) {
            guard let before = try usageUnlocked(owner) else { throw RelayStorageError.unknownOwner(owner) }
            let exists = try db.cached("SELECT 1 FROM blobs WHERE owner = ? AND key = ?")
            exists.bind(1, blob: owner.bytes); exists.bind(2, key)
            let known = try exists.step()
            exists.resetKeepingBindings()
            if known { return false }
            let quota = before.quotaOverride ?? defaultQuota
            if before.usedBytes + size > quota {
                throw RelayStorageError.quotaExceeded(quotaBytes: quota, usedBytes: before.usedBytes, neededBytes: size)
            }
            let s = try db.cached("INSERT INTO blobs(owner, key, size, created_at, used_at) VALUES (?, ?, ?, ?, ?4)")
            s.bind(1, blob: owner.bytes); s.bind(2, key); s.bind(3, size); s.bind(4, now)
            try s.run()
            let u = try db.cached("UPDATE owners SET blobs = blobs + 1, blob_bytes = blob_bytes + ? WHERE owner = ?")
            u.bind(1, size); u.bind(2, blob: owner.bytes)
            try u.run()
            return true
        }
    }
}
