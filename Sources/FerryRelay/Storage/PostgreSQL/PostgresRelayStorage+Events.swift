import FerryPostgres
import FerrySync

extension PostgresRelayStorage {
    /// A push in a fixed number of round trips, whatever its size: the batch's events and
    /// streams already stored are read in two queries, each event is decided here in order (as
    /// one by one: a duplicate event id, a stored version as new or newer, or a newer version
    /// that replaces the stored one), then the replaced rows go in one DELETE and the new rows
    /// come in one INSERT.
    public func push(_ owner: OwnerID, events: [IncomingEvent], quotaBytes defaultQuota: Int64, now: Int64) throws(RelayStorageError) -> [PushOutcome] {
        try run("storing events", write: true) { db in
            // The owner's row lock serializes this owner's pushes across every relay process.
            let (before, firstSeq) = try lockOwner(db, owner)
            let o = PostgresValue.bytes(owner.bytes)
            // Event ids stored now (other streams' rows included), and each stream's row. Planned
            // for each push: a plan kept from when the table was small would scan it whole.
            var storedEvents = Set<[UInt8]>()
            let known = try db.execute("""
                SELECT event FROM events WHERE owner = $1 AND event = ANY($2::bytea[])
                """, [o, .byteaArray(events.map(\.event.bytes))], prepared: false)
            for row in 0..<known.count { if let e = known.bytes(row, 0) { storedEvents.insert(e) } }
            // A stream's current row: its seq when stored (nil when added by this push), and its
            // index among this push's rows while pending.
            struct Current { var seq: Int64?; var stamp: [UInt8]; var event: [UInt8]; var size: Int64; var pending: Int? }
            var streams: [[UInt8]: Current] = [:]
            let rows = try db.execute("""
                SELECT stream, seq, stamp, event, length(data)::bigint FROM events
                WHERE owner = $1 AND stream = ANY($2::bytea[])
                """, [o, .byteaArray(events.map(\.stream.bytes))], prepared: false)
            for row in 0..<rows.count {
                guard let stream = rows.bytes(row, 0) else { continue }
                streams[stream] = Current(seq: rows.int64(row, 1), stamp: rows.bytes(row, 2) ?? [], event: rows.bytes(row, 3) ?? [],
                                          size: rows.int64(row, 4), pending: nil)
            }

            var nextSeq = firstSeq
            var outcomes: [PushOutcome] = []
            outcomes.reserveCapacity(events.count)
            var addedEvents: Int64 = 0, addedBytes: Int64 = 0
            var removed: [Int64] = []
            // The rows to insert, by their index in `events`; one replaced within the batch is
            // dropped again (its seq stays used, as one by one).
            var inserts: [(index: Int, seq: Int64)?] = []
            for (index, e) in events.enumerated() {
                let event = e.event.bytes, stream = e.stream.bytes
                if storedEvents.contains(event) { outcomes.append(.duplicate); continue }
                if let current = streams[stream] {
                    if !current.stamp.lexicographicallyPrecedes(e.stampKey) {
                        // Same stamp: the same version under another event id; either way the
                        // stored one stays current.
                        outcomes.append(current.stamp == e.stampKey ? .duplicate : .superseded)
                        continue
                    }
                    if let seq = current.seq { removed.append(seq) }
                    if let pending = current.pending { inserts[pending] = nil }
                    storedEvents.remove(current.event)
                    addedEvents -= 1; addedBytes -= current.size
                }
                streams[stream] = Current(seq: nil, stamp: e.stampKey, event: event, size: Int64(e.bytes.count), pending: inserts.count)
                inserts.append((index, nextSeq))
                storedEvents.insert(event)
                nextSeq += 1
                addedEvents += 1; addedBytes += Int64(e.bytes.count)
                outcomes.append(.stored)
            }
            let quota = before.quotaOverride ?? defaultQuota
            if addedBytes > 0, before.usedBytes + addedBytes > quota {
                throw RelayStorageError.quotaExceeded(quotaBytes: quota, usedBytes: before.usedBytes, neededBytes: addedBytes)
            }
            if !removed.isEmpty {
                try db.execute("DELETE FROM events WHERE owner = $1 AND seq = ANY($2::bigint[])", [o, .int8Array(removed)])
            }
            let rowsToInsert = inserts.compactMap { $0 }
            if !rowsToInsert.isEmpty {
                let chosen = rowsToInsert.map { events[$0.index] }
                try db.execute("""
                    INSERT INTO events(owner, seq, event, stream, stamp, deleted, stored_at, data)
                    SELECT $1, s, e, st, sk, d, $7, x
                    FROM unnest($2::bigint[], $3::bytea[], $4::bytea[], $5::bytea[], $6::boolean[], $8::bytea[]) AS t(s, e, st, sk, d, x)
                    """, [o, .int8Array(rowsToInsert.map(\.seq)),
                          .byteaArray(chosen.map(\.event.bytes)), .byteaArray(chosen.map(\.stream.bytes)),
                          .byteaArray(chosen.map(\.stampKey)), .boolArray(chosen.map(\.deleted)),
                          .int(now), .byteaArray(chosen.map(\.bytes))])
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

    public func blobSize(_ owner: OwnerID, key: String, touching now: Int64?) throws(RelayStorageError) -> Int64? {
        guard let now else {
            return try run("reading a blob record") { db in
                let r = try db.execute("SELECT size FROM blobs WHERE owner = $1 AND key = $2", [.bytes(owner.bytes), .text(key)])
                return r.count > 0 ? r.int64(0, 0) : nil
            }
        }
        // One statement: a removal that comes first leaves nothing to update (nil), one that
        // comes after sees the new time and keeps the blob.
        return try run("reading a blob record", write: true) { db in
            let r = try db.execute("UPDATE blobs SET used_at = greatest(used_at, $3) WHERE owner = $1 AND key = $2 RETURNING size",
                                   [.bytes(owner.bytes), .text(key), .int(now)])
            return r.count > 0 ? r.int64(0, 0) : nil
        }
    }

    public func deleteBlob(_ owner: OwnerID, key: String, usedSince: Int64) throws(RelayStorageError) -> RelayBlobDeletion {
        try run("removing a blob", write: true) { db in
            _ = try lockOwner(db, owner)
            let o = PostgresValue.bytes(owner.bytes)
            let r = try db.execute("SELECT size, used_at FROM blobs WHERE owner = $1 AND key = $2 FOR UPDATE", [o, .text(key)])
            guard r.count > 0 else { return .absent }
            let (size, used) = (r.int64(0, 0), r.int64(0, 1))
            if used >= usedSince { return .inUse(lastUsed: used) }
            try db.execute("DELETE FROM blobs WHERE owner = $1 AND key = $2", [o, .text(key)])
            try db.execute("DELETE FROM blob_chunks WHERE owner = $1 AND key = $2", [o, .text(key)])
            try db.execute("UPDATE owners SET blobs = blobs - 1, blob_bytes = blob_bytes - $1 WHERE owner = $2", [.int(size), o])
            return .deleted(size: size)
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
            try db.execute("INSERT INTO blobs(owner, key, size, created_at, used_at) VALUES ($1, $2, $3, $4, $4)",
                           [o, .text(key), .int(size), .int(now)])
            try db.execute("UPDATE owners SET blobs = blobs + 1, blob_bytes = blob_bytes + $1 WHERE owner = $2", [.int(size), o])
            return true
        }
    }
}
