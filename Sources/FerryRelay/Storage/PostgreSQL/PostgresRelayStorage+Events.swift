import FerryPostgres
import FerrySync

extension PostgresRelayStorage {
    public func push(_ owner: OwnerID, events: [IncomingEvent], quotaBytes defaultQuota: Int64, now: Int64) throws(RelayStorageError) -> [PushOutcome] {
        try run("storing events", write: true) { db in
            // The owner's row lock serializes this owner's pushes across every relay process.
            let (before, firstSeq) = try lockOwner(db, owner)
            let o = PostgresValue.bytes(owner.bytes)
            var nextSeq = firstSeq
            var outcomes: [PushOutcome] = []
            var addedEvents: Int64 = 0, addedBytes: Int64 = 0
            for e in events {
                let known = try db.execute("SELECT 1 FROM events WHERE owner = $1 AND event = $2", [o, .bytes(e.event.bytes)])
                if known.count > 0 { outcomes.append(.duplicate); continue }

                let current = try db.execute("SELECT id, stamp FROM events WHERE owner = $1 AND stream = $2", [o, .bytes(e.stream.bytes)])
                if current.count > 0 {
                    let stamp = current.bytes(0, 1) ?? []
                    if !stamp.lexicographicallyPrecedes(e.stampKey) {
                        // Same stamp: the same version under another event id; either way the
                        // stored one stays current.
                        outcomes.append(stamp == e.stampKey ? .duplicate : .superseded)
                        continue
                    }
                    let removed = try db.execute("DELETE FROM events WHERE id = $1 RETURNING length(data)::bigint", [.int(current.int64(0, 0))])
                    for row in 0..<removed.count {
                        addedEvents -= 1; addedBytes -= removed.int64(row, 0)
                    }
                }
                try db.execute("""
                    INSERT INTO events(owner, seq, event, stream, stamp, deleted, stored_at, data) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                    """, [o, .int(nextSeq), .bytes(e.event.bytes), .bytes(e.stream.bytes), .bytes(e.stampKey), .bool(e.deleted),
                          .int(now), .bytes(e.bytes)])
                nextSeq += 1
                addedEvents += 1; addedBytes += Int64(e.bytes.count)
                outcomes.append(.stored)
            }
            let quota = before.quotaOverride ?? defaultQuota
            if addedBytes > 0, before.usedBytes + addedBytes > quota {
                throw RelayStorageError.quotaExceeded(quotaBytes: quota, usedBytes: before.usedBytes, neededBytes: addedBytes)
            }
            try db.execute("""
                UPDATE owners SET next_seq = $1, events = events + $2, event_bytes = event_bytes + $3, last_push_at = $4 WHERE owner = $5
                """, [.int(nextSeq), .int(addedEvents), .int(addedBytes), .int(now), o])
            if nextSeq > firstSeq {
                // Delivered to listeners when (and only if) this transaction commits.
                try db.execute("SELECT pg_notify($1, $2)", [.text(PostgresRelayStorage.channel), .text(owner.description)])
            }
            return outcomes
        }
    }

    public func pull(_ owner: OwnerID, after cursor: Cursor, limit: Int, maxBytes: Int) throws(RelayStorageError) -> EventPage {
        // As SQLite does. The numbering and the events are read in two statements: a restore
        // found in between (by another pull, through any relay) only moves the offset, so this
        // page is numbered the old way and the device's next pull is refused.
        let o = PostgresValue.bytes(owner.bytes)
        let (known, nextSeq, offset): (Bool, Int64, Int64) = try run("reading events") { db in
            let r = try db.execute("SELECT next_seq, cursor_offset FROM owners WHERE owner = $1", [o])
            return r.count == 1 ? (true, r.int64(0, 0), r.int64(0, 1)) : (false, 1, 0)
        }
        var after: Int64 = 0
        if cursor > .start {
            guard cursor.sequence >= offset else {
                throw .cursorLost(owner: owner, cursor: cursor, why: .beforeRestore(lowest: Cursor(offset)))
            }
            after = cursor.sequence - offset
            if after >= nextSeq {
                let newest = Cursor(offset + nextSeq - 1)
                guard Cursor.couldFollowRestore(cursor, newest: newest) else {
                    throw .cursorNeverIssued(owner: owner, cursor: cursor, newest: newest)
                }
                if known { try moveOffsetPast(cursor, of: owner) }
                throw .cursorLost(owner: owner, cursor: cursor, why: .ahead(newest: Cursor(offset + nextSeq - 1)))
            }
        }
        return try run("reading events") { db in
            let r = try db.execute("SELECT seq, data FROM events WHERE owner = $1 AND seq > $2 ORDER BY seq LIMIT $3",
                                   [o, .int(after), .int(Int64(limit) + 1)])
            var events: [[UInt8]] = []
            var last = cursor
            var bytes = 0
            var more = false
            for row in 0..<r.count {
                let data = r.bytes(row, 1) ?? []
                if events.count == limit || (!events.isEmpty && bytes + data.count > maxBytes) {
                    more = true
                    break
                }
                events.append(data)
                bytes += data.count
                last = Cursor(r.int64(row, 0) + offset)
            }
            return EventPage(events: events, cursor: last, more: more)
        }
    }

    /// The storage was found restored by a pull after `cursor`: under the owner's row lock,
    /// unless a pull through any relay did so since, moves the owner's cursor offset past every
    /// cursor handed out before, and wakes the owner's waiting pulls on every relay (their
    /// cursors are refused now).
    private func moveOffsetPast(_ cursor: Cursor, of owner: OwnerID) throws(RelayStorageError) {
        try run("renumbering cursors", write: true) { db in
            let (_, nextSeq) = try lockOwner(db, owner)
            let o = PostgresValue.bytes(owner.bytes)
            let offset = try db.execute("SELECT cursor_offset FROM owners WHERE owner = $1", [o]).int64(0, 0)
            guard cursor.sequence >= offset else { return }
            guard let moved = Cursor.offsetAfterRestore(offset: offset, nextSeq: nextSeq) else {
                throw RelayStorageError.database(context: "renumbering cursors", message: "the owner's cursor numbers are used up")
            }
            try db.execute("UPDATE owners SET cursor_offset = $1 WHERE owner = $2", [.int(moved), o])
            try db.execute("SELECT pg_notify($1, $2)", [.text(PostgresRelayStorage.channel), .text(owner.description)])
        }
    }

    public func dropTombstones(storedBefore: Int64) throws(RelayStorageError) -> Int {
        // One transaction per owner, each taking the owner's row lock first as pushes do, so a
        // sweep and a push (from any relay) never wait on each other in opposite orders.
        let owners: [[UInt8]] = try run("finding tombstones") { db in
            let r = try db.execute("SELECT DISTINCT owner FROM events WHERE deleted AND stored_at < $1", [.int(storedBefore)])
            return (0..<r.count).map { r.bytes($0, 0) ?? [] }
        }
        var total = 0
        for ownerBytes in owners where ownerBytes.count == 16 {
            let owner = OwnerID(bytes: ownerBytes)
            total += try run("dropping tombstones", write: true) { db in
                _ = try lockOwner(db, owner)
                let r = try db.execute("""
                    DELETE FROM events WHERE owner = $1 AND deleted AND stored_at < $2 RETURNING length(data)::bigint
                    """, [.bytes(ownerBytes), .int(storedBefore)])
                let freed = (0..<r.count).reduce(Int64(0)) { $0 + r.int64($1, 0) }
                try db.execute("UPDATE owners SET events = events - $1, event_bytes = event_bytes - $2 WHERE owner = $3",
                               [.int(Int64(r.count)), .int(freed), .bytes(ownerBytes)])
                return r.count
            }
        }
        return total
    }

    public func blobSize(_ owner: OwnerID, key: String) throws(RelayStorageError) -> Int64? {
        try run("reading a blob record") { db in
            let r = try db.execute("SELECT size FROM blobs WHERE owner = $1 AND key = $2", [.bytes(owner.bytes), .text(key)])
            return r.count > 0 ? r.int64(0, 0) : nil
        }
    }

    public func addBlob(_ owner: OwnerID, key: String, size: Int64, quotaBytes defaultQuota: Int64, now: Int64) throws(RelayStorageError) -> Bool {
        try run("recording a blob", write: true) { db in
            let (before, _) = try lockOwner(db, owner)
            let o = PostgresValue.bytes(owner.bytes)
            if try db.execute("SELECT 1 FROM blobs WHERE owner = $1 AND key = $2", [o, .text(key)]).count > 0 { return false }
            let quota = before.quotaOverride ?? defaultQuota
            if before.usedBytes + size > quota {
                throw RelayStorageError.quotaExceeded(quotaBytes: quota, usedBytes: before.usedBytes, neededBytes: size)
            }
            try db.execute("INSERT INTO blobs(owner, key, size, created_at) VALUES ($1, $2, $3, $4)", [o, .text(key), .int(size), .int(now)])
            try db.execute("UPDATE owners SET blobs = blobs + 1, blob_bytes = blob_bytes + $1 WHERE owner = $2", [.int(size), o])
            return true
        }
    }
}
