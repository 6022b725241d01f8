import FerryModel
import FerrySQLite

extension Store {
    /// How `list` orders records.
    public enum ListOrder: String, Sendable {
        /// By id (bytewise); `after` is an id.
        case id
        /// By stamp, oldest first; `after` is a stamp.
        case stamp
    }

    /// A page of `list`.
    public struct Page: Sendable {
        /// At most `limit` records, and fewer when they are large (see `maxPageBytes`); at
        /// least one whenever any remain after `after`.
        public var records: [Record]
        /// Pass as `after` to read the next page; present whenever more records remain, nil on
        /// the last page.
        public var next: String?
    }

    /// The most bytes of record text (payload, attachment references, entity and id, see
    /// `pageBytes(of:)`) one page of `list` or `changes` holds, whatever its record limit: a
    /// page stops before the record that would go past it, unless that record is its first.
    /// 8 MiB keeps a page's reply well under Varlink's 16 MiB message cap, envelope included,
    /// while a single record (payload at most 1 MiB by default) always fits.
    public static let maxPageBytes = 8 << 20

    /// What `record` counts against `maxPageBytes`: its payload and attachment references as
    /// sent, its entity and id, and a fixed allowance for the other fields of its wire form.
    public static func pageBytes(of record: Record) -> Int {
        (record.payload?.utf8.count ?? 0) + record.attachments.count * 67
            + record.entity.utf8.count + record.id.utf8.count + 128
    }

    // MARK: Local writes

    /// Writes a new version of one record (a new record when `id` is nil or unknown).
    /// - Throws: `FerryError` for bad input (nothing written), `immutableRecord`,
    ///   `attachmentMissing`, `spaceNotFound`, `storage`.
    @discardableResult
    public func put(space: String = Store.privateSpace, entity: String, id: String? = nil, payload: String,
                    attachments: [String] = []) throws(FerryError) -> Record {
        try putMany(space: space, [PutRequest(entity: entity, id: id, payload: payload, attachments: attachments)])[0]
    }

    /// Writes many records in one transaction: all of them or, on any error, none.
    public func putMany(space: String = Store.privateSpace, _ requests: [PutRequest]) throws(FerryError) -> [Record] {
        let operation = try prepare(.put(space: space, requests))
        return try write("writing \(requests.count) record(s)") { writer in try operation.run(writer) }
    }

    /// Deletes a record: writes a tombstone with a new stamp. Deleting a tombstone returns it
    /// unchanged.
    /// - Throws: `notFound` when the record does not exist; `immutableRecord`.
    @discardableResult
    public func delete(space: String = Store.privateSpace, entity: String, id: String) throws(FerryError) -> Record {
        let operation = try prepare(.delete(space: space, entity: entity, id: id))
        return try write("deleting \(entity)/\(id)") { writer in try operation.run(writer) }[0]
    }

    /// A local write, for `perform`.
    public enum WriteOperation: Sendable {
        /// Like `putMany`: all records or none.
        case put(space: String, [PutRequest])
        /// Like `delete`.
        case delete(space: String, entity: String, id: String)
    }

    /// Runs many independent local writes in one transaction (one commit for all: group
    /// commit without threads). Each succeeds or fails on its own, exactly as the matching
    /// single call would, in order.
    public func perform(_ operations: [WriteOperation]) -> [Result<[Record], FerryError>] {
        var results = [Result<[Record], FerryError>?](repeating: nil, count: operations.count)
        var prepared: [(Int, PreparedWrite)] = []
        prepared.reserveCapacity(operations.count)
        for (i, operation) in operations.enumerated() {
            do throws(FerryError) {
                prepared.append((i, try prepare(operation)))
            } catch {
                results[i] = .failure(error)
            }
        }
        if prepared.count == 1 {
            // One write: its own job, rolled back whole on failure; no savepoint needed.
            let (index, item) = prepared[0]
            do throws(FerryError) {
                results[index] = .success(try write("writing") { writer in try item.run(writer) })
            } catch {
                results[index] = .failure(error)
            }
        } else if !prepared.isEmpty {
            let items = prepared
            do throws(FerryError) {
                let outcomes = try write("writing \(items.count) batch(es)") { writer -> [Result<[Record], FerryError>] in
                    try items.map { item in
                        // A savepoint each, so one failing write leaves the others in the transaction.
                        try writer.db.cached("SAVEPOINT op").run()
                        let mark = writer.jobEffectsMark
                        do {
                            let records = try item.1.run(writer)
                            try writer.db.cached("RELEASE op").run()
                            return .success(records)
                        } catch {
                            try writer.db.cached("ROLLBACK TO op").run()
                            try writer.db.cached("RELEASE op").run()
                            writer.discardJobEffects(since: mark)
                            if let e = error as? FerryError { return .failure(e) }
                            return .failure(.storage(context: "writing", message: "\(error)"))
                        }
                    }
                }
                for (k, item) in items.enumerated() { results[item.0] = outcomes[k] }
            } catch {
                for item in items { results[item.0] = .failure(error) }
            }
        }
        return results.map { $0! }
    }

    /// A validated local write, ready to run on the writer.
    struct PreparedWrite: Sendable {
        enum Kind: Sendable {
            case put([(entity: String, id: String, payload: String, attachments: [String])])
            case delete(entity: String, id: String)
        }
        let sid: Int64
        let space: String
        let kind: Kind

        func run(_ writer: Writer) throws -> [Record] {
            switch kind {
            case .put(let items):
                var records: [Record] = []
                records.reserveCapacity(items.count)
                for (index, item) in items.enumerated() {
                    do {
                        records.append(try writer.putLocal(sid: sid, space: space, entity: item.entity, id: item.id, payload: item.payload,
                                                           deleted: false, attachments: item.attachments))
                    } catch let error as FerryError {
                        throw error.inBatch(index: index, of: items.count)
                    }
                }
                return records
            case .delete(let entity, let id):
                guard try writer.current(sid: sid, entity: entity, id: id) != nil else {
                    throw FerryError.notFound(space: space, entity: entity, id: id)
                }
                return [try writer.putLocal(sid: sid, space: space, entity: entity, id: id, payload: nil, deleted: true, attachments: [])]
            }
        }
    }

    /// Checks a write against the record model and limits; changes nothing.
    /// A record's entity and id as bytes, joined by NUL (which neither may hold): ids are
    /// compared as given, bytewise, as the store compares them. One allocation.
    private static func batchKey(entity: String, id: String) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(entity.utf8.count + 1 + id.utf8.count)
        key += entity.utf8
        key.append(0)
        key += id.utf8
        return key
    }

    func prepare(_ operation: WriteOperation) throws(FerryError) -> PreparedWrite {
        switch operation {
        case .delete(let space, let entity, let id):
            try RecordVersion.validate(entity: entity, id: id)
            return PreparedWrite(sid: try catalog.sid(space), space: space, kind: .delete(entity: entity, id: id))
        case .put(let space, let requests):
            try checkBatch(requests.count)
            let sid = try catalog.sid(space)
            var checked: [(entity: String, id: String, payload: String, attachments: [String])] = []
            checked.reserveCapacity(requests.count)
            // Ids are compared as given (bytewise), as the store compares them.
            var seen = Set<[UInt8]>()
            if requests.count > 1 { seen.reserveCapacity(requests.count) }
            for (index, request) in requests.enumerated() {
                let id = request.id ?? configuration.newID()
                let version = RecordVersion(entity: request.entity, id: id, hlc: Stamp(millis: 0, counter: 0, node: nodeID),
                                            deleted: false, payload: request.payload, attachments: request.attachments)
                do throws(FerryError) {
                    try version.validate(limits: configuration.limits, payloadIsWellFormed: request.payloadIsWellFormed)
                } catch {
                    throw (request.id == nil ? error.aboutRecordWithoutID() : error).inBatch(index: index, of: requests.count)
                }
                if requests.count > 1, !seen.insert(Self.batchKey(entity: request.entity, id: id)).inserted {
                    throw FerryError.invalidID(entity: request.entity, id: id, reason: "the batch holds this record more than once")
                        .inBatch(index: index, of: requests.count)
                }
                checked.append((request.entity, id, request.payload, version.attachments))
            }
            return PreparedWrite(sid: sid, space: space, kind: .put(checked))
        }
    }

    // MARK: Remote changes and imports

    /// Merges versions received through a transport (or, with `.imported`, from a bundle) with
    /// the merge rules, in one transaction. Malformed versions are rejected one by one with the
    /// reason and nothing of them is written; the others are applied.
    /// - Parameter payloadsAreWellFormed: the caller made every payload itself from a parsed JSON
    ///   object within the payload depth limit (as the sync engine does when it opens an
    ///   envelope), so only sizes are checked, not the JSON again.
    public func applyRemote(space: String = Store.privateSpace, _ versions: [RecordVersion],
                            origin: ChangeOrigin, payloadsAreWellFormed: Bool = false) throws(FerryError) -> [ApplyResult] {
        try checkBatch(versions.count)
        let sid = try catalog.sid(space)
        var results = [ApplyResult?](repeating: nil, count: versions.count)
        var valid: [(Int, RecordVersion)] = []
        valid.reserveCapacity(versions.count)
        for (i, version) in versions.enumerated() {
            do throws(FerryError) {
                try version.validate(limits: configuration.limits, payloadIsWellFormed: payloadsAreWellFormed)
                valid.append((i, version))
            } catch {
                results[i] = .rejected(error)
            }
        }
        if !valid.isEmpty {
            let items = valid
            let applied = try write("applying \(items.count) remote version(s)") { writer in
                let before = writer.lastSeq
                var refusals = false
                if case .remote(let transport) = origin { refusals = try Self.hasRefusals(transport: transport, in: writer.db) }
                let results = try items.map { try writer.apply($0.1, sid: sid, origin: origin, originHasRefusals: refusals) }
                if case .remote(let transport) = origin {
                    try writer.catchUpPushCursor(sid: sid, transport: transport, before: before)
                }
                return results
            }
            for (k, item) in items.enumerated() { results[item.0] = applied[k] }
        }
        return results.map { $0! }
    }

    // MARK: Reads

    /// The current version of a record (a tombstone when it was deleted), or nil.
    public func get(space: String = Store.privateSpace, entity: String, id: String) throws(FerryError) -> Record? {
        let sid = try catalog.sid(space)
        return try read("reading \(entity)/\(id)") { db in
            let statement = try db.cached(
                "SELECT entity, id, hlc, deleted, payload, attachments, seq FROM records WHERE sid = ? AND entity = ? AND id = ?")
            statement.bind(1, sid)
            statement.bind(2, entity)
            statement.bind(3, id)
            defer { statement.reset() }
            guard try statement.step() else { return nil }
            let (version, seq) = try Reader.version(statement)
            return Record(space: space, version: version, seq: seq)
        }
    }

    /// A page of the records of one entity kind: at most `limit` records and at most
    /// `maxBytes` of record text (`pageBytes(of:)`), but always at least one record when any
    /// remain, so that a page of large records is shorter than `limit` and still moves on.
    /// `next` is set whenever records remain after the page.
    /// - Parameters:
    ///   - after: the `next` of the previous page.
    ///   - limit: 1 to 1,000 records.
    ///   - where: top-level payload fields that must equal the given JSON scalars, type and
    ///     value: `null` matches a field that is null (not a missing one), `true` a field that
    ///     is true (not 1); an integer matches an integer field of that value, a fraction any
    ///     number equal to it as a double; a string the same text.
    ///   - maxBytes: the byte budget of the page (default `maxPageBytes`).
    /// - Throws: `invalidEntity`, `spaceNotFound`, `invalidStamp` (an `after` for order `stamp`
    ///   that is not a stamp and an id joined by `|`, as `next` gives it), `storage`.
    public func list(space: String = Store.privateSpace, entity: String, after: String? = nil, limit: Int = 100,
                     includeDeleted: Bool = false, order: ListOrder = .id,
                     where filters: [(field: String, value: FilterValue)] = [],
                     maxBytes: Int = Store.maxPageBytes) throws(FerryError) -> Page {
        guard Names.isValidName(entity) else { throw .invalidEntity(entity.clipped(to: 80)) }
        let sid = try catalog.sid(space)
        var stampCursor: (stamp: String, id: String)?
        if let after, order == .stamp {
            let parts = after.split(separator: "|", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, let stamp = Stamp.parse(parts[0]), stamp.text == parts[0] else {
                throw .invalidStamp(after.clipped(to: 140), reason: "a cursor of the stamp order is the next of a page listed by stamp "
                    + "(a stamp and an id joined by |); list from the start without one")
            }
            stampCursor = (parts[0], parts[1])
        }
        let limit = min(max(limit, 1), 1000)
        let key = order == .id ? "id" : "hlc"
        var sql = "SELECT entity, id, hlc, deleted, payload, attachments, seq FROM records WHERE sid = ? AND entity = ?"
        if !includeDeleted { sql += " AND deleted = 0" }
        if after != nil { sql += order == .id ? " AND id > ?" : " AND (hlc, id) > (?, ?)" }
        for filter in filters { sql += " AND EXISTS (SELECT 1 FROM json_each(payload) WHERE key = ? AND \(filter.value.condition))" }
        sql += " ORDER BY \(key)\(order == .stamp ? ", id" : "") LIMIT ?"
        return try read("listing \(entity)") { db in
            let statement = try db.cached(text: sql)
            defer { statement.reset() }
            var i: Int32 = 1
            statement.bind(i, sid); i += 1
            statement.bind(i, entity); i += 1
            if let stampCursor {
                statement.bind(i, stampCursor.stamp); i += 1
                statement.bind(i, stampCursor.id); i += 1
            } else if let after {
                statement.bind(i, after); i += 1
            }
            for filter in filters {
                statement.bind(i, filter.field); i += 1
                if filter.value.bind(statement, i) { i += 1 }
            }
            statement.bind(i, limit + 1)
            var records: [Record] = []
            var bytes = 0
            var more = false
            while try statement.step() {
                // A row past the limit or the budget only tells that more remain.
                if records.count == limit { more = true; break }
                let (version, seq) = try Reader.version(statement)
                let record = Record(space: space, version: version, seq: seq)
                let size = Store.pageBytes(of: record)
                if !records.isEmpty && bytes + size > maxBytes { more = true; break }
                bytes += size
                records.append(record)
            }
            var next: String?
            if more, let last = records.last {
                next = order == .id ? last.id : last.hlc.text + "|" + last.id
            }
            return Page(records: records, next: next)
        }
    }

    /// A page of the change log.
    public struct ChangePage: Sendable {
        /// The changed records, in change-log order, each at its current version.
        public var records: [Record]
        /// The change-log position this page read through (the next `since`), which is past
        /// the last record when changes of other spaces or entities were skipped.
        public var through: Int64
    }

    /// The changes after `since` in change-log order, each record at its current version (a
    /// record changed several times since then appears once, at its latest change). A page
    /// holds at most `maxBytes` of record text (`pageBytes(of:)`) but always at least one
    /// record when one is read, so that large records cost bounded memory; `through` then
    /// stops before the first record left out.
    /// - Parameters:
    ///   - spaces: only these spaces (nil: all).
    ///   - entities: only these entity kinds (nil: all).
    ///   - limit: the most change-log rows to read (1 to 10,000).
    ///   - maxBytes: the byte budget of the page (default `maxPageBytes`).
    /// - Throws: `spaceNotFound`, `storage`.
    public func changes(since: Int64, spaces: Set<String>? = nil, entities: Set<String>? = nil,
                        limit: Int = 1000, maxBytes: Int = Store.maxPageBytes) throws(FerryError) -> ChangePage {
        var sids: Set<Int64>?
        if let spaces {
            var s = Set<Int64>()
            for name in spaces { s.insert(try catalog.sid(name)) }
            sids = s
        }
        let catalog = self.catalog
        return try read("reading changes") { db in
            // Rows superseded by a later change of the same record are read and skipped, so
            // `through` still moves past them.
            let statement = try db.cached("""
                SELECT r.entity, r.id, r.hlc, r.deleted, r.payload, r.attachments, r.seq, r.sid, c.seq
                FROM changes c JOIN records r ON r.rid = c.rid
                WHERE c.seq > ? ORDER BY c.seq LIMIT ?
                """)
            defer { statement.reset() }
            statement.bind(1, since)
            statement.bind(2, max(1, min(limit, 10_000)))
            var out: [Record] = []
            var through = since
            var bytes = 0
            while try statement.step() {
                let row = statement.int64(8)
                let sid = statement.int64(7)
                if statement.int64(6) != row || (sids.map { !$0.contains(sid) } ?? false)
                    || (entities.map { !$0.contains(statement.text(0) ?? "") } ?? false) {
                    through = row
                    continue
                }
                let (version, seq) = try Reader.version(statement)
                let record = Record(space: catalog.name(of: sid), version: version, seq: seq)
                let size = Store.pageBytes(of: record)
                // Left for the next page, which starts with it.
                if !out.isEmpty && bytes + size > maxBytes { break }
                bytes += size
                out.append(record)
                through = row
            }
            return ChangePage(records: out, through: through)
        }
    }

    // MARK: Losing versions

    /// The versions of a record that lost a merge, newest first.
    public func conflicts(space: String = Store.privateSpace, entity: String, id: String) throws(FerryError) -> [LosingVersion] {
        try RecordVersion.validate(entity: entity, id: id)
        let sid = try catalog.sid(space)
        return try read("reading conflicts of \(entity)/\(id)") { db in
            let statement = try db.cached("""
                SELECT l.hlc, l.deleted, l.payload, l.attachments, l.origin, l.winner_hlc, l.lost_at
                FROM losers l JOIN records r ON r.rid = l.rid
                WHERE r.sid = ? AND r.entity = ? AND r.id = ? ORDER BY l.lid DESC
                """)
            defer { statement.reset() }
            statement.bind(1, sid)
            statement.bind(2, entity)
            statement.bind(3, id)
            var out: [LosingVersion] = []
            while try statement.step() {
                guard let hlc = Stamp.parse(statement.text(0) ?? ""), let winner = Stamp.parse(statement.text(5) ?? "") else { continue }
                out.append(LosingVersion(
                    version: RecordVersion(entity: entity, id: id, hlc: hlc, deleted: statement.bool(1),
                                           payload: statement.text(2), attachments: AttachmentList.decode(statement.text(3))),
                    origin: ChangeOrigin(parsing: statement.text(4) ?? "local"), winner: winner, lostAt: statement.int64(6)))
            }
            return out
        }
    }

    /// Makes a losing version current again, as a new local version (with a new stamp, so it
    /// wins everywhere).
    /// - Throws: `conflictNotFound` when no losing version with that stamp is kept.
    @discardableResult
    public func restoreConflict(space: String = Store.privateSpace, entity: String, id: String,
                                stamp: Stamp) throws(FerryError) -> Record {
        guard let loser = try conflicts(space: space, entity: entity, id: id).first(where: { $0.version.hlc == stamp }) else {
            throw .conflictNotFound(entity: entity, id: id, stamp: stamp.text)
        }
        if loser.version.deleted { return try delete(space: space, entity: entity, id: id) }
        return try put(space: space, entity: entity, id: id, payload: loser.version.payload ?? "{}",
                       attachments: loser.version.attachments)
    }

    // MARK: Helpers

    func read<T>(_ context: String, slow: Bool = false, _ body: (Database) throws -> T) throws(FerryError) -> T {
        do {
            return try (slow ? slowReader : reader).read(body)
        } catch let error as FerryError {
            throw error
        } catch {
            throw .storage(context: context, message: "\(error)")
        }
    }
}

/// A JSON scalar that a payload field must equal in `Store.list(where:)`.
public enum FilterValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)

    /// The condition on a `json_each` row (`type`, `value`) of a field equal to this value:
    /// the same JSON type, and for numbers and strings the same value (one parameter).
    var condition: String {
        switch self {
        case .null: "type = 'null'"
        case .bool(let b): b ? "type = 'true'" : "type = 'false'"
        case .int: "type = 'integer' AND value = ?"
        case .double: "type IN ('integer', 'real') AND value = ?"
        case .string: "type = 'text' AND value = ?"
        }
    }

    /// Binds the parameter of `condition`, if it has one; true when it did.
    func bind(_ statement: Statement, _ index: Int32) -> Bool {
        switch self {
        case .null, .bool: return false
        case .int(let i): statement.bind(index, i)
        case .double(let d): statement.bind(index, d)
        case .string(let s): statement.bind(index, s)
        }
        return true
    }
}
