import FerryJSON
import FerryModel
import FerrySQLite

extension Store {
    /// One record a transport still needs, built from the record's current version.
    public struct Pending: Sendable, Hashable {
        public var version: RecordVersion
        /// The seq of the record's latest change: the order of sending, and what a transport's
        /// cursor moves past once it has the version.
        public var outboxSeq: Int64
        /// The record's row, the same for the record's whole life.
        public var rid: Int64
    }

    /// What `pending` found after a point of the change log.
    public struct PendingPage: Sendable, Hashable {
        /// The records the transport needs, in change-log order.
        public var items: [Pending]
        /// Where the read started: after the `after` asked for or the transport's cursor,
        /// whichever is later. Pass it to `recordPush` as `from`.
        public var from: Int64
        /// Every change up to this seq was examined: the ones in `items` and the ones the
        /// transport does not need (it has them, it refused them, or they came from it).
        /// A transport that took `items` has everything up to here.
        public var through: Int64
        /// The transport's `since` when read: it changes whenever the transport starts over, so
        /// a batch read before that moves nothing when recorded (pass it to `recordPush`).
        public var since: Int64
    }

    // MARK: Transports

    /// Adds a transport to a space and queues every record of the space for it.
    /// - Parameter startOver: for a name that exists already (its kind or configuration
    ///   changes): true when it now points at another place (another folder or relay), so its
    ///   cursor, progress and refusals go and every record is queued for it again, as for a
    ///   new one; false to keep them (the same place, new credentials).
    /// - Throws: `invalidTransportName`, `spaceNotFound`.
    public func addTransport(space: String = Store.privateSpace, name: String, kind: String, config: String = "{}",
                             startOver: Bool = true) throws(FerryError) {
        guard Names.isValidName(name) else { throw .invalidTransportName(name.clipped(to: 80)) }
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
            if !exists || startOver { try Self.startOver(sid: sid, transport: name, in: writer) }
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
    /// backup, wiped): drops its cursor, progress and refusals and queues every record of the
    /// space for it again, so that it gets a full copy and is read from its beginning.
    /// Other transports are not affected; a transport that no longer exists is left alone.
    /// - Throws: `spaceNotFound`.
    public func restartTransport(space: String = Store.privateSpace, name: String) throws(FerryError) {
        let sid = try catalog.sid(space)
        guard catalog.transports(of: sid).contains(where: { $0.name == name }) else { return }
        try write("starting transport \(name) over") { writer in
            try Self.startOver(sid: sid, transport: name, in: writer)
        }
    }

    /// Forgets what `transport` of space `sid` was sent, refused and read: its push cursor goes
    /// back to the start of the change log, so every record of the space is queued for it, and
    /// records it delivered before now are sent to it too (it may no longer have them).
    private static func startOver(sid: Int64, transport: String, in writer: Writer) throws(SQLiteError) {
        let db = writer.db
        // `since` changes at every start-over (also with no write in between), which is what
        // tells `recordPush` that a batch was read before it.
        let cursor = try db.prepare("UPDATE transports SET sent = 0, since = max(?, since + 1) WHERE sid = ? AND name = ?")
        cursor.bind(1, writer.lastSeq); cursor.bind(2, sid); cursor.bind(3, transport)
        try cursor.run()
        try forget(sid: sid, transport: transport, in: db)
    }

    /// The progress keys of a transport: `push:<name>`, `cursor:<name>` (its pull cursor),
    /// `blobs-checked:<name>` (when the engine last checked its own blobs there), and
    /// `last-success:<name>` (its last success, for status across restarts).
    static let transportProgressPrefixes = ["push:", "cursor:", "blobs-checked:", "last-success:"]

    /// Drops the progress (`transportProgressPrefixes`), the refusals and the blobs to remove of
    /// `transport` in space `sid`.
    private static func forget(sid: Int64, transport: String, in db: Database) throws(SQLiteError) {
        let progress = try db.prepare("DELETE FROM progress WHERE sid = ?1 AND key IN (SELECT value || ?2 FROM json_each(?3))")
        progress.bind(1, sid); progress.bind(2, transport)
        progress.bind(3, JSONWriter.string(.array(transportProgressPrefixes.map { .string($0) })))
        try progress.run()
        let refusals = try db.prepare("DELETE FROM outbox_delivery WHERE transport = ? AND rid IN (SELECT rid FROM records WHERE sid = ?)")
        refusals.bind(1, transport); refusals.bind(2, sid)
        try refusals.run()
        let deletions = try db.prepare("DELETE FROM blob_deletions WHERE sid = ? AND transport = ?")
        deletions.bind(1, sid); deletions.bind(2, transport)
        try deletions.run()
    }

    /// Removes a transport with its cursor, progress and refusals.
    public func removeTransport(space: String = Store.privateSpace, name: String) throws(FerryError) {
        let sid = try catalog.sid(space)
        let catalog = self.catalog
        try write("removing transport \(name)") { writer in
            let db = writer.db
            let statement = try db.prepare("DELETE FROM transports WHERE sid = ? AND name = ?")
            statement.bind(1, sid); statement.bind(2, name)
            try statement.run()
            try Self.forget(sid: sid, transport: name, in: db)
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
    /// (`transportProgressPrefixes`) are kept only while the transport exists: a value saved
    /// by a loop that was still finishing when its transport was removed is dropped.
    public func setProgress(space: String = Store.privateSpace, key: String, value: String) throws(FerryError) {
        let sid = try catalog.sid(space)
        let now = configuration.wallClock()
        let catalog = self.catalog
        try write("saving progress \(key)") { writer in
            for prefix in Self.transportProgressPrefixes where key.hasPrefix(prefix) {
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

    /// Where a transport's push stands: its cursor, and the seq it was (re)started at.
    struct PushCursor {
        var sent: Int64
        var since: Int64
    }

    static func pushCursor(sid: Int64, transport: String, in db: Database) throws(SQLiteError) -> PushCursor? {
        let statement = try db.cached("SELECT sent, since FROM transports WHERE sid = ? AND name = ?")
        defer { statement.reset() }
        statement.bind(1, sid); statement.bind(2, transport)
        return try statement.step() ? PushCursor(sent: statement.int64(0), since: statement.int64(1)) : nil
    }

    /// Whether `transport` refused anything or took a version ahead of its cursor
    /// (outbox_delivery rows are the exception: reads skip the check of every record against
    /// them when there are none).
    static func hasRefusals(transport: String, in db: Database) throws(SQLiteError) -> Bool {
        let statement = try db.cached("SELECT EXISTS (SELECT 1 FROM outbox_delivery WHERE transport = ?)")
        defer { statement.reset() }
        statement.bind(1, transport)
        return try statement.step() && statement.bool(0)
    }

    /// The changes a transport needs, for `pending` and `pendingCount`: of its space, after
    /// ?1 and up to ?7, not delivered by it since it was (re)started (origin ?3, seq above
    /// ?4), and not refused by it at the current version (checked when ?5).
    private static let neededByTransport = """
        FROM changes c JOIN records r ON r.rid = c.rid
        WHERE c.seq > ?1 AND c.seq <= ?7 AND c.sid = ?2
          AND (c.origin != ?3 OR c.seq <= ?4)
          AND (?5 = 0 OR NOT EXISTS (SELECT 1 FROM outbox_delivery d WHERE d.rid = c.rid AND d.transport = ?6
                                     AND (d.acked_hlc >= r.hlc OR d.error_hlc >= r.hlc)))
        """

    private static let pendingSQL = """
        SELECT r.entity, r.id, r.hlc, r.deleted, r.payload, r.attachments, c.seq, c.rid
        \(neededByTransport)
        ORDER BY c.seq LIMIT ?8
        """
    private static let pendingCountSQL = "SELECT count(*) \(neededByTransport)"
    private static let pendingDeletionsSQL = """
        SELECT r.entity, r.id, r.hlc, r.deleted, r.payload, r.attachments, c.seq, c.rid
        \(neededByTransport) AND r.deleted = 1
        ORDER BY c.seq LIMIT ?8
        """

    private static func bindNeeded(_ statement: Statement, sid: Int64, transport: String, after: Int64, cursor: PushCursor,
                                   refusals: Bool, upTo: Int64) {
        statement.bind(1, after); statement.bind(2, sid)
        statement.bind(3, ChangeOrigin.remote(transport: transport).description); statement.bind(4, cursor.since)
        statement.bind(5, refusals); statement.bind(6, transport); statement.bind(7, upTo)
    }

    /// The records the transport still needs after its cursor and after `after`, in
    /// change-log order, each at its current version; at most `limit`. An unknown transport
    /// needs nothing.
    public func pending(space: String = Store.privateSpace, transport: String, after: Int64 = 0,
                        limit: Int = 400) throws(FerryError) -> PendingPage {
        let sid = try catalog.sid(space)
        return try read("reading the outbox") { db in
            // The end is fixed first: a change committed while this reads is left for the next
            // read, never counted as examined.
            let last = try db.scalarInt("SELECT coalesce(max(seq), 0) FROM changes") ?? 0
            guard let cursor = try Self.pushCursor(sid: sid, transport: transport, in: db) else {
                return PendingPage(items: [], from: after, through: after, since: -1)
            }
            let from = max(after, cursor.sent)
            let statement = try db.cached(text: Self.pendingSQL)
            defer { statement.reset() }
            let limit = max(1, limit)
            Self.bindNeeded(statement, sid: sid, transport: transport, after: from, cursor: cursor,
                            refusals: try Self.hasRefusals(transport: transport, in: db), upTo: last)
            statement.bind(8, limit)
            var out: [Pending] = []
            while try statement.step() {
                let (version, seq) = try Reader.version(statement)
                out.append(Pending(version: version, outboxSeq: seq, rid: statement.int64(7)))
            }
            let through = out.count == limit ? out[out.count - 1].outboxSeq : max(from, last)
            return PendingPage(items: out, from: from, through: through, since: cursor.since)
        }
    }

    /// The deletions (tombstones) the transport still needs anywhere past its cursor, oldest
    /// change first, at most `limit`: what a transport refusing the backlog for its quota can
    /// still take, since a tombstone frees the room of the version it replaces there. The
    /// engine pushes them ahead of the backlog and records them with `recordAhead`. Reads the
    /// whole backlog's index entries, so it is for that rare case, not every push.
    public func pendingDeletions(space: String = Store.privateSpace, transport: String,
                                 limit: Int = 400) throws(FerryError) -> (items: [Pending], since: Int64) {
        let sid = try catalog.sid(space)
        return try read("reading the outbox's deletions") { db in
            guard let cursor = try Self.pushCursor(sid: sid, transport: transport, in: db) else { return ([], -1) }
            let statement = try db.cached(text: Self.pendingDeletionsSQL)
            defer { statement.reset() }
            Self.bindNeeded(statement, sid: sid, transport: transport, after: cursor.sent, cursor: cursor,
                            refusals: try Self.hasRefusals(transport: transport, in: db), upTo: .max)
            statement.bind(8, max(1, limit))
            var out: [Pending] = []
            while try statement.step() {
                let (version, seq) = try Reader.version(statement)
                out.append(Pending(version: version, outboxSeq: seq, rid: statement.int64(7)))
            }
            return (out, cursor.since)
        }
    }

    /// Records versions a transport stored ahead of its cursor (`pendingDeletions` read them
    /// when its `since` was `since`): they are not offered to it again unless the record
    /// changes, and an earlier refusal of the record by it goes. The marks go once the cursor
    /// passes the records (`recordPush`). Nothing happens for a removed transport or one that
    /// started over since the read.
    public func recordAhead(space: String = Store.privateSpace, transport: String, since: Int64,
                            acked: [(rid: Int64, hlc: Stamp)]) throws(FerryError) {
        let sid = try catalog.sid(space)
        guard !acked.isEmpty else { return }
        try write("recording what \(transport) took ahead of its backlog") { writer in
            guard let cursor = try Self.pushCursor(sid: sid, transport: transport, in: writer.db), cursor.since == since else { return }
            for ack in acked { try writer.recordAcknowledgement(rid: ack.rid, transport: transport, hlc: ack.hlc) }
        }
    }

    /// How many records `pending` would give the transport in all, counted without reading
    /// them (a status with a backlog of millions answers at once).
    public func pendingCount(space: String = Store.privateSpace, transport: String) throws(FerryError) -> Int {
        let sid = try catalog.sid(space)
        return try read("counting the outbox") { db in
            guard let cursor = try Self.pushCursor(sid: sid, transport: transport, in: db) else { return 0 }
            let statement = try db.cached(text: Self.pendingCountSQL)
            defer { statement.reset() }
            Self.bindNeeded(statement, sid: sid, transport: transport, after: cursor.sent, cursor: cursor,
                            refusals: try Self.hasRefusals(transport: transport, in: db), upTo: .max)
            return try statement.step() ? Int(statement.int64(0)) : 0
        }
    }

    /// Records what a transport answered for a batch read with `pending` (which gave `from`,
    /// `through` and `since`): it stored `acked` (or had them) and refused `refused` for good,
    /// and the batch held every record it needed after `from` up to `through`.
    ///
    /// Its cursor moves to `through` when it stood at `from` or later. Otherwise (an answer for
    /// a batch read before an earlier one was recorded, which the engine never makes) the
    /// cursor stays and the batch is sent again, which every transport answers as duplicates;
    /// so does a batch read before the transport started over. A refusal keeps the record
    /// visible with the reason and stops it being offered to that transport until it changes;
    /// an acknowledgement of a later version drops an earlier refusal. Nothing happens for a
    /// removed transport.
    public func recordPush(space: String = Store.privateSpace, transport: String, from: Int64, through: Int64,
                           since: Int64, acked: [(rid: Int64, hlc: Stamp)],
                           refused: [(key: RecordKey, hlc: Stamp, error: String)] = []) throws(FerryError) {
        let sid = try catalog.sid(space)
        try write("recording what \(transport) took of \(acked.count + refused.count) version(s)") { writer in
            let db = writer.db
            guard let cursor = try Self.pushCursor(sid: sid, transport: transport, in: db) else { return }
            // Read before the transport started over: what it answered is about a place that lost it.
            if since != cursor.since { return }
            // Delivery rows (refusals, marks) are rare: without any, there is nothing to clear.
            let deliveryRows = try Self.hasRefusals(transport: transport, in: db)
            if cursor.sent >= from && through > cursor.sent {
                let move = try db.cached("UPDATE transports SET sent = ? WHERE sid = ? AND name = ?")
                move.bind(1, through); move.bind(2, sid); move.bind(3, transport)
                try move.run()
                if deliveryRows {
                    // Marks of versions taken ahead (`recordAhead`) whose records the cursor has
                    // now passed say nothing the cursor does not.
                    let passed = try db.cached("""
                        DELETE FROM outbox_delivery WHERE transport = ?1 AND error IS NULL
                          AND EXISTS (SELECT 1 FROM records r WHERE r.rid = outbox_delivery.rid AND r.sid = ?2 AND r.seq <= ?3)
                        """)
                    passed.bind(1, transport); passed.bind(2, sid); passed.bind(3, through)
                    try passed.run()
                }
            }
            if cursor.sent >= from, !acked.isEmpty, deliveryRows {
                let cleared = try db.cached(
                    "DELETE FROM outbox_delivery WHERE rid = ? AND transport = ? AND (error_hlc IS NULL OR error_hlc <= ?)")
                for ack in acked {
                    cleared.bind(1, ack.rid); cleared.bind(2, transport); cleared.bind(3, ack.hlc.text)
                    try cleared.run()
                }
            }
            for refusal in refused {
                guard let current = try writer.current(sid: sid, entity: refusal.key.entity, id: refusal.key.id) else { continue }
                try writer.recordRejection(rid: current.rid, transport: transport, hlc: refusal.hlc, error: refusal.error)
            }
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

    /// Whether transport `t` (a row of `transports`) needs change `c` of record `r`: the SQL
    /// form of what `pending` reads.
    static let transportNeedsChange = """
        c.seq > t.sent AND (c.origin != 'remote:' || t.name OR c.seq <= t.since)
        AND NOT EXISTS (SELECT 1 FROM outbox_delivery d WHERE d.rid = c.rid AND d.transport = t.name
                        AND (d.acked_hlc >= r.hlc OR d.error_hlc >= r.hlc))
        """

    /// The outbox's entries among changes `c` of records `r`: changes some transport of their
    /// space needs; every change of a space with no transport (kept for the first one added);
    /// records a transport refused. With ?3 (errors only), only the refused ones and the ones
    /// a transport in the JSON list ?4 of `[sid, name]` needs. ?1: a space, or NULL for all;
    /// ?5: changes up to it are left out (nothing there is an entry: see `outboxFloor`).
    static let outboxEntryCondition = """
        (?1 IS NULL OR c.sid = ?1) AND c.seq > ?5
        AND ((?3 = 0 AND (NOT EXISTS (SELECT 1 FROM transports t WHERE t.sid = c.sid)
                          OR EXISTS (SELECT 1 FROM transports t WHERE t.sid = c.sid AND \(transportNeedsChange))))
             OR EXISTS (SELECT 1 FROM outbox_delivery d WHERE d.rid = c.rid AND d.error IS NOT NULL)
             OR EXISTS (SELECT 1 FROM json_each(?4) h JOIN transports t
                          ON t.sid = json_extract(h.value, '$[0]') AND t.name = json_extract(h.value, '$[1]')
                        WHERE t.sid = c.sid AND \(transportNeedsChange)))
        """

    /// The seq below which no change is an outbox entry, so reads start there: the lowest
    /// cursor among the transports that count, or 0 when a refusal or a space without
    /// transports may hold an entry anywhere.
    static func outboxFloor(sid: Int64?, errorsOnly: Bool, held: [(sid: Int64, name: String)], in db: Database) throws -> Int64 {
        if try db.scalarInt("SELECT EXISTS (SELECT 1 FROM outbox_delivery WHERE error IS NOT NULL)") == 1 { return 0 }
        var floor = Int64.max
        let statement = try db.prepare("SELECT s.sid, t.name, t.sent FROM spaces s LEFT JOIN transports t ON t.sid = s.sid")
        while try statement.step() {
            let space = statement.int64(0)
            if let sid, space != sid { continue }
            guard let name = statement.text(1) else {
                if !errorsOnly { return 0 }  // a space without transports: all of it
                continue
            }
            if errorsOnly && !held.contains(where: { $0.sid == space && $0.name == name }) { continue }
            floor = min(floor, statement.int64(2))
        }
        return floor
    }

    /// The outbox: every record some transport still needs, every record of a space with no
    /// transport, and every record a transport refused, in change-log order, with each
    /// transport's state: the ones that have its current version, and the ones that refused a
    /// version (with the reason). `queuedAt` is the time of the version's stamp.
    /// - Parameters:
    ///   - errorsOnly: only entries a transport refused, and entries waiting for a transport in
    ///     `held` (one that cannot take anything now, such as a relay over its quota).
    ///   - held: transports, by space, whose pushes fail as a whole; with `errorsOnly`, an entry
    ///     that one of them needs counts as an error.
    public func outbox(space: String? = nil, errorsOnly: Bool = false, held: [(space: String, transport: String)] = [],
                       limit: Int = 1000) throws(FerryError) -> [OutboxEntry] {
        let catalog = self.catalog
        var sid: Int64?
        if let space { sid = try catalog.sid(space) }
        var heldList: [(sid: Int64, name: String)] = []
        for h in held {
            guard let heldSID = try? catalog.sid(h.space) else { continue }
            heldList.append((heldSID, h.transport))
        }
        let heldJSON = JSONWriter.string(.array(heldList.map { [.int($0.sid), .string($0.name)] }))
        return try read("reading the outbox", slow: true) { db in
            let floor = try Self.outboxFloor(sid: sid, errorsOnly: errorsOnly, held: heldList, in: db)
            guard floor < .max else { return [] }
            var cursors: [Int64: [(name: String, sent: Int64, since: Int64)]] = [:]
            let transports = try db.prepare("SELECT sid, name, sent, since FROM transports ORDER BY name")
            while try transports.step() {
                cursors[transports.int64(0), default: []].append((transports.text(1) ?? "", transports.int64(2), transports.int64(3)))
            }
            // With errorsOnly the filter is in the query, so `limit` counts entries with errors.
            let statement = try db.prepare("""
                SELECT c.rid, c.sid, r.entity, r.id, r.hlc, c.seq, c.origin FROM changes c JOIN records r ON r.rid = c.rid
                WHERE \(Self.outboxEntryCondition)
                ORDER BY c.seq LIMIT ?2
                """)
            statement.bind(1, sid); statement.bind(2, limit); statement.bind(3, errorsOnly); statement.bind(4, heldJSON)
            statement.bind(5, floor)
            let deliveries = try db.cached(
                "SELECT transport, acked_hlc, error, error_hlc FROM outbox_delivery WHERE rid = ? ORDER BY transport")
            var out: [OutboxEntry] = []
            while try statement.step() {
                let entrySID = statement.int64(1), seq = statement.int64(5)
                let hlc = Stamp.parse(statement.text(4) ?? "") ?? Stamp(millis: 0, counter: 0, node: NodeID(0))
                let origin = statement.text(6) ?? ""
                var byTransport: [String: OutboxEntry.Delivery] = [:]
                // Transports that have the current version (their cursor passed it, or it came
                // from them); refusals below take their place.
                for t in cursors[entrySID] ?? [] where seq <= t.sent || (origin == "remote:" + t.name && seq > t.since) {
                    byTransport[t.name] = .init(transport: t.name, acknowledged: hlc, error: nil, errorStamp: nil)
                }
                deliveries.bind(1, statement.int64(0))
                while try deliveries.step() {
                    let name = deliveries.text(0) ?? ""
                    let acked = deliveries.text(1).flatMap(Stamp.parse) ?? byTransport[name]?.acknowledged
                    byTransport[name] = .init(transport: name, acknowledged: acked, error: deliveries.text(2),
                                              errorStamp: deliveries.text(3).flatMap(Stamp.parse))
                }
                deliveries.reset()
                out.append(OutboxEntry(space: catalog.name(of: entrySID), entity: statement.text(2) ?? "",
                                       id: statement.text(3) ?? "", hlc: hlc, seq: seq, queuedAt: hlc.millis,
                                       deliveries: byTransport.values.sorted { $0.transport < $1.transport }))
            }
            return out
        }
    }
}

extension Store {
    /// Starts a space's sync over (its owner changed): every transport of the space starts
    /// over (`restartTransport`), so every record of it is queued for every transport again.
    public func requeueForTransports(space: String) throws(FerryError) {
        let sid = try catalog.sid(space)
        let names = catalog.transports(of: sid).map(\.name)
        try write("queueing space \(space) for upload again") { writer in
            for name in names { try Self.startOver(sid: sid, transport: name, in: writer) }
        }
    }
}
