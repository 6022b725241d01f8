import FerryJSON
import FerryModel
import FerrySQLite

extension Store {
    /// One record a transport still needs, built from the record's current version.
    public struct Pending: Sendable, Hashable {
        public var version: RecordVersion
        /// The outbox order; pass the last one seen as `after` for the next page.
        public var outboxSeq: Int64
        /// The record's row, the same for the record's whole life: what `acknowledge(rows:)`
        /// takes.
        public var rid: Int64
    }

    // MARK: Transports

    /// Adds a transport to a space and queues every record of the space for it.
    /// - Parameter startOver: for a name that exists already (its kind or configuration
    ///   changes): true when it now points at another place (another folder or relay), so its
    ///   cursor, progress and acknowledgements go and every record is queued for it again, as
    ///   for a new one; false to keep them (the same place, new credentials).
    /// - Throws: `invalidTransportName`, `spaceNotFound`.
    public func addTransport(space: String = Store.privateSpace, name: String, kind: String, config: String = "{}",
                             startOver: Bool = true) throws(FerryError) {
        guard Names.isValidName(name) else { throw .invalidTransportName(String(name.prefix(80))) }
        let sid = try catalog.sid(space)
        let catalog = self.catalog
        let now = configuration.wallClock()
        let exists = catalog.transports(of: sid).contains { $0.name == name }
        try write("adding transport \(name)") { writer in
            let db = writer.db
            let insert = try db.prepare("""
                INSERT INTO transports (sid, name, kind, config, created_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (sid, name) DO UPDATE SET kind = excluded.kind, config = excluded.config
                """)
            insert.bind(1, sid); insert.bind(2, name); insert.bind(3, kind); insert.bind(4, config); insert.bind(5, now)
            try insert.run()
            if !exists || startOver { try Self.queueEverything(sid: sid, for: name, now: now, in: db) }
            let info = TransportInfo(space: space, name: name, kind: kind, config: config)
            writer.whenCommitted {
                catalog.update(space) { s in
                    s.transports.removeAll { $0.name == name }
                    s.transports.append(info)
                    s.transports.sort { $0.name < $1.name }
                }
            }
        }
    }

    /// Starts a transport over, because its host lost what it held (restored from an older
    /// backup, wiped): drops its cursor, progress and acknowledgements and queues every record
    /// of the space for it again, so that it gets a full copy and is read from its beginning.
    /// Other transports are not affected; a transport that no longer exists is left alone.
    /// - Throws: `spaceNotFound`.
    public func restartTransport(space: String = Store.privateSpace, name: String) throws(FerryError) {
        let sid = try catalog.sid(space)
        guard catalog.transports(of: sid).contains(where: { $0.name == name }) else { return }
        let now = configuration.wallClock()
        try write("starting transport \(name) over") { writer in
            try Self.queueEverything(sid: sid, for: name, now: now, in: writer.db)
        }
    }

    /// Forgets what transport `name` of space `sid` was sent and read, and queues every record
    /// of the space for it (a record with no outbox entry was delivered to every other
    /// transport already: that is recorded, so it is not sent to them again).
    private static func queueEverything(sid: Int64, for name: String, now: Int64, in db: Database) throws(SQLiteError) {
        let progress = try db.prepare("DELETE FROM progress WHERE sid = ? AND (key = 'push:' || ?2 OR key = 'cursor:' || ?2)")
        progress.bind(1, sid); progress.bind(2, name)
        try progress.run()
        let acks = try db.prepare("DELETE FROM outbox_delivery WHERE transport = ? AND rid IN (SELECT rid FROM records WHERE sid = ?)")
        acks.bind(1, name); acks.bind(2, sid)
        try acks.run()
        let delivered = try db.prepare("""
            INSERT OR IGNORE INTO outbox_delivery (rid, transport, acked_hlc, error, error_hlc, updated_at)
            SELECT r.rid, t.name, r.hlc, NULL, NULL, ?1 FROM records r JOIN transports t ON t.sid = r.sid
            WHERE r.sid = ?2 AND t.name != ?3 AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.rid = r.rid)
            """)
        delivered.bind(1, now); delivered.bind(2, sid); delivered.bind(3, name)
        try delivered.run()
        let queue = try db.prepare("""
            INSERT INTO outbox (rid, sid, hlc, seq, queued_at)
            SELECT rid, sid, hlc, seq, ? FROM records WHERE sid = ? AND true
            ON CONFLICT (rid) DO NOTHING
            """)
        queue.bind(1, now); queue.bind(2, sid)
        try queue.run()
    }

    /// Removes a transport: drops its progress and acknowledgements, and prunes the outbox
    /// entries every remaining transport has.
    public func removeTransport(space: String = Store.privateSpace, name: String) throws(FerryError) {
        let sid = try catalog.sid(space)
        let catalog = self.catalog
        let remaining = catalog.transports(of: sid).filter { $0.name != name }.count
        try write("removing transport \(name)") { writer in
            let db = writer.db
            for sql in ["DELETE FROM transports WHERE sid = ? AND name = ?",
                        "DELETE FROM progress WHERE sid = ? AND (key = 'push:' || ? OR key = 'cursor:' || ?)"] {
                let statement = try db.prepare(sql)
                statement.bind(1, sid); statement.bind(2, name)
                if sql.contains("progress") { statement.bind(3, name) }
                try statement.run()
            }
            let deliveries = try db.prepare(
                "DELETE FROM outbox_delivery WHERE transport = ? AND rid IN (SELECT rid FROM outbox WHERE sid = ?)")
            deliveries.bind(1, name); deliveries.bind(2, sid)
            try deliveries.run()
            if remaining > 0 {
                let prune = try db.prepare("""
                    DELETE FROM outbox WHERE sid = ?1 AND ?2 <= (SELECT count(*) FROM outbox_delivery d
                      WHERE d.rid = outbox.rid AND d.acked_hlc >= outbox.hlc)
                    """)
                prune.bind(1, sid); prune.bind(2, remaining)
                try prune.run()
                try db.execute("DELETE FROM outbox_delivery WHERE rid NOT IN (SELECT rid FROM outbox)")
            }
            writer.whenCommitted { catalog.update(space) { $0.transports.removeAll { $0.name == name } } }
        }
    }

    /// The transports of a space.
    public func transports(space: String = Store.privateSpace) throws(FerryError) -> [TransportInfo] {
        catalog.transports(of: try catalog.sid(space))
    }

    // MARK: Progress

    /// A progress value of a space (`push:<transport>`, `cursor:<transport>`, ...).
    public func progress(space: String = Store.privateSpace, key: String) throws(FerryError) -> String? {
        let sid = try catalog.sid(space)
        return try read("reading progress \(key)") { db in
            let statement = try db.cached("SELECT value FROM progress WHERE sid = ? AND key = ?")
            defer { statement.reset() }
            statement.bind(1, sid); statement.bind(2, key)
            return try statement.step() ? statement.text(0) : nil
        }
    }

    /// Sets a progress value, committed like any write. A transport's own keys
    /// (`push:<name>`, `cursor:<name>`) are kept only while the transport exists: a value saved
    /// by a loop that was still finishing when its transport was removed is dropped.
    public func setProgress(space: String = Store.privateSpace, key: String, value: String) throws(FerryError) {
        let sid = try catalog.sid(space)
        let now = configuration.wallClock()
        let catalog = self.catalog
        try write("saving progress \(key)") { writer in
            for prefix in ["push:", "cursor:"] where key.hasPrefix(prefix) {
                let name = String(key.dropFirst(prefix.count))
                if !catalog.transports(of: sid).contains(where: { $0.name == name }) { return }
            }
            let statement = try writer.db.cached(
                "INSERT OR REPLACE INTO progress (sid, key, value, updated_at) VALUES (?, ?, ?, ?)")
            statement.bind(1, sid); statement.bind(2, key); statement.bind(3, value); statement.bind(4, now)
            try statement.run()
        }
    }

    // MARK: Sending

    /// Records the transport still needs, in outbox order after `after`: each at its current
    /// version, skipping those it acknowledged or rejected at that version.
    public func pending(space: String = Store.privateSpace, transport: String, after: Int64 = 0,
                        limit: Int = 400) throws(FerryError) -> [Pending] {
        let sid = try catalog.sid(space)
        return try read("reading the outbox") { db in
            let statement = try db.cached("""
                SELECT r.entity, r.id, r.hlc, r.deleted, r.payload, r.attachments, o.seq, o.rid
                FROM outbox o JOIN records r ON r.rid = o.rid
                LEFT JOIN outbox_delivery d ON d.rid = o.rid AND d.transport = ?2
                WHERE o.sid = ?1 AND o.seq > ?3
                  AND (d.rid IS NULL OR ((d.acked_hlc IS NULL OR d.acked_hlc < r.hlc)
                                     AND (d.error_hlc IS NULL OR d.error_hlc < r.hlc)))
                ORDER BY o.seq LIMIT ?4
                """)
            defer { statement.reset() }
            statement.bind(1, sid); statement.bind(2, transport); statement.bind(3, after); statement.bind(4, max(1, limit))
            var out: [Pending] = []
            while try statement.step() {
                let (version, seq) = try Reader.version(statement)
                out.append(Pending(version: version, outboxSeq: seq, rid: statement.int64(7)))
            }
            return out
        }
    }

    /// How many records `pending` would give the transport in all, counted without reading
    /// them (a status with a backlog of millions answers at once).
    public func pendingCount(space: String = Store.privateSpace, transport: String) throws(FerryError) -> Int {
        let sid = try catalog.sid(space)
        return try read("counting the outbox") { db in
            let statement = try db.cached("""
                SELECT count(*) FROM outbox o JOIN records r ON r.rid = o.rid
                LEFT JOIN outbox_delivery d ON d.rid = o.rid AND d.transport = ?2
                WHERE o.sid = ?1
                  AND (d.rid IS NULL OR ((d.acked_hlc IS NULL OR d.acked_hlc < r.hlc)
                                     AND (d.error_hlc IS NULL OR d.error_hlc < r.hlc)))
                """)
            defer { statement.reset() }
            statement.bind(1, sid); statement.bind(2, transport)
            return try statement.step() ? Int(statement.int64(0)) : 0
        }
    }

    /// A transport saved these versions (or later ones). Entries every configured transport has
    /// acknowledged are pruned.
    public func acknowledge(space: String = Store.privateSpace, transport: String,
                            _ acks: [(key: RecordKey, hlc: Stamp)]) throws(FerryError) {
        let sid = try catalog.sid(space)
        try write("acknowledging \(acks.count) version(s) for \(transport)") { writer in
            let onlyTransport = writer.catalog.transports(of: sid).map(\.name) == [transport]
            let queued = try writer.db.cached(
                "SELECT o.rid, o.hlc FROM records r JOIN outbox o ON o.rid = r.rid WHERE r.sid = ? AND r.entity = ? AND r.id = ?")
            for ack in acks {
                queued.bind(1, sid)
                queued.bind(2, ack.key.entity)
                queued.bind(3, ack.key.id)
                let found = try queued.step() ? (rid: queued.int64(0), hlc: queued.text(1).flatMap(Stamp.parse)) : nil
                queued.reset()
                guard let found, let queuedHLC = found.hlc else { continue }
                try Self.acknowledge(rid: found.rid, queued: queuedHLC, acked: ack.hlc, sid: sid, transport: transport,
                                     onlyTransport: onlyTransport, writer)
            }
        }
    }

    /// `acknowledge` for versions read with `pending`, by their rows: no lookup by key.
    public func acknowledge(space: String = Store.privateSpace, transport: String,
                            rows acks: [(rid: Int64, hlc: Stamp)]) throws(FerryError) {
        let sid = try catalog.sid(space)
        try write("acknowledging \(acks.count) version(s) for \(transport)") { writer in
            let onlyTransport = writer.catalog.transports(of: sid).map(\.name) == [transport]
            let queued = try writer.db.cached("SELECT hlc FROM outbox WHERE rid = ? AND sid = ?")
            for ack in acks {
                queued.bind(1, ack.rid)
                queued.bind(2, sid)
                let queuedHLC = try queued.step() ? queued.text(0).flatMap(Stamp.parse) : nil
                queued.reset()
                guard let queuedHLC else { continue }
                try Self.acknowledge(rid: ack.rid, queued: queuedHLC, acked: ack.hlc, sid: sid, transport: transport,
                                     onlyTransport: onlyTransport, writer)
            }
        }
    }

    /// One acknowledgement of `acked` for the entry of `rid`, queued at `queued`. With one
    /// transport, its acknowledgement of the queued version (or a later one) is every
    /// acknowledgement there is: the entry goes at once, with no per-transport row written only
    /// to be deleted again.
    private static func acknowledge(rid: Int64, queued: Stamp, acked: Stamp, sid: Int64, transport: String,
                                    onlyTransport: Bool, _ writer: Writer) throws {
        if onlyTransport && acked >= queued {
            try writer.removeFromOutbox(rid: rid)
        } else {
            try writer.recordAck(rid: rid, transport: transport, hlc: acked)
            try writer.pruneIfDelivered(rid: rid, sid: sid, hlc: queued)
        }
    }

    /// A transport refused a version for good; the entry keeps the error text and stays visible
    /// (and is not offered to that transport again until the record changes).
    public func reject(space: String = Store.privateSpace, transport: String, key: RecordKey, hlc: Stamp,
                       error: String) throws(FerryError) {
        let sid = try catalog.sid(space)
        try write("recording a rejection by \(transport)") { writer in
            guard let current = try writer.current(sid: sid, entity: key.entity, id: key.id) else { return }
            try writer.recordRejection(rid: current.rid, transport: transport, hlc: hlc, error: error)
        }
    }

    /// The outbox: every queued record with each transport's state (errors included).
    /// - Parameters:
    ///   - errorsOnly: only entries a transport refused, and entries waiting for a transport in
    ///     `held` (one that cannot take anything now, such as a relay over its quota).
    ///   - held: transports, by space, whose pushes fail as a whole; with `errorsOnly`, an entry
    ///     that one of them has not taken counts as an error.
    public func outbox(space: String? = nil, errorsOnly: Bool = false, held: [(space: String, transport: String)] = [],
                       limit: Int = 1000) throws(FerryError) -> [OutboxEntry] {
        let catalog = self.catalog
        var sid: Int64?
        if let space { sid = try catalog.sid(space) }
        var heldList: [JSONValue] = []
        for h in held {
            guard let heldSID = try? catalog.sid(h.space) else { continue }
            heldList.append([.int(heldSID), .string(h.transport)])
        }
        let heldJSON = JSONWriter.string(.array(heldList))
        return try read("reading the outbox", slow: true) { db in
            // With errorsOnly the filter is in the query, so `limit` counts entries with errors.
            // Waiting for a held transport: no acknowledgement or refusal of this version by it.
            let statement = try db.prepare("""
                SELECT o.rid, o.sid, r.entity, r.id, o.hlc, o.seq, o.queued_at FROM outbox o JOIN records r ON r.rid = o.rid
                WHERE (?1 IS NULL OR o.sid = ?1)
                  AND (?3 = 0
                       OR EXISTS (SELECT 1 FROM outbox_delivery d WHERE d.rid = o.rid AND d.error IS NOT NULL)
                       OR EXISTS (SELECT 1 FROM json_each(?4) h
                                  WHERE json_extract(h.value, '$[0]') = o.sid
                                    AND NOT EXISTS (SELECT 1 FROM outbox_delivery d
                                                    WHERE d.rid = o.rid AND d.transport = json_extract(h.value, '$[1]')
                                                      AND (d.acked_hlc >= r.hlc OR d.error_hlc >= r.hlc))))
                ORDER BY o.seq LIMIT ?2
                """)
            statement.bind(1, sid); statement.bind(2, limit); statement.bind(3, errorsOnly); statement.bind(4, heldJSON)
            let deliveries = try db.cached(
                "SELECT transport, acked_hlc, error, error_hlc FROM outbox_delivery WHERE rid = ? ORDER BY transport")
            var out: [OutboxEntry] = []
            while try statement.step() {
                deliveries.reset()
                deliveries.bind(1, statement.int64(0))
                var list: [OutboxEntry.Delivery] = []
                while try deliveries.step() {
                    list.append(.init(transport: deliveries.text(0) ?? "", acknowledged: deliveries.text(1).flatMap(Stamp.parse),
                                      error: deliveries.text(2), errorStamp: deliveries.text(3).flatMap(Stamp.parse)))
                }
                deliveries.reset()
                out.append(OutboxEntry(space: catalog.name(of: statement.int64(1)), entity: statement.text(2) ?? "",
                                       id: statement.text(3) ?? "", hlc: Stamp.parse(statement.text(4) ?? "") ?? Stamp(millis: 0, counter: 0, node: NodeID(0)),
                                       seq: statement.int64(5), queuedAt: statement.int64(6), deliveries: list))
            }
            return out
        }
    }
}

extension Store {
    /// Starts a space's sync over (its owner changed): drops every transport's progress and
    /// acknowledgements in the space and queues every record of it for every transport again.
    public func requeueForTransports(space: String) throws(FerryError) {
        let sid = try catalog.sid(space)
        let now = configuration.wallClock()
        try write("queueing space \(space) for upload again") { writer in
            let db = writer.db
            let progress = try db.prepare("DELETE FROM progress WHERE sid = ? AND (key LIKE 'push:%' OR key LIKE 'cursor:%')")
            progress.bind(1, sid)
            try progress.run()
            let deliveries = try db.prepare("DELETE FROM outbox_delivery WHERE rid IN (SELECT rid FROM records WHERE sid = ?)")
            deliveries.bind(1, sid)
            try deliveries.run()
            let queue = try db.prepare("""
                INSERT INTO outbox (rid, sid, hlc, seq, queued_at) SELECT rid, sid, hlc, seq, ? FROM records WHERE sid = ? AND true
                ON CONFLICT (rid) DO UPDATE SET hlc = excluded.hlc, seq = excluded.seq
                """)
            queue.bind(1, now); queue.bind(2, sid)
            try queue.run()
        }
    }
}
