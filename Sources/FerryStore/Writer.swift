import FerryModel
import FerrySQLite
import Foundation

/// The write side of the store: the one write connection, the clock and the change-log counter.
///
/// Only the current leader of the `WriteQueue` calls it, so it needs no lock of its own.
/// `@unchecked Sendable` for that reason.
final class Writer: @unchecked Sendable {
    let db: Database
    let config: StoreConfiguration
    let catalog: Catalog
    private(set) var clock: HybridClock
    /// The clock ceiling saved in the store: greater than every stamp the clock has issued or
    /// observed. It is rewritten (in the same transaction) only when the clock reaches it, and
    /// then `clockLeaseMillis` ahead, so a steady stream of writes saves it about once a second
    /// instead of in every transaction. A store that opens starts its clock there.
    private var clockCeiling: Stamp
    /// How far ahead of the clock a saved ceiling is.
    static let clockLeaseMillis: Int64 = 1_000
    /// The greatest change-log sequence number committed.
    private(set) var committedSeq: Int64
    private var seq: Int64
    /// Work to do once the current transaction committed (file removals, cache updates).
    private var afterCommit: [() -> Void] = []
    private var jobAfterCommit: [() -> Void] = []
    /// Attachments whose reference count dropped in the current job.
    private var unreferenced: Set<String> = []
    /// The changes of the current job, and of the jobs of the current transaction that
    /// succeeded: what `onCommit` hands on.
    private var jobChanges: [Record] = []
    private var batchChanges: [Record] = []
    /// Told of every commit that added changes, with those changes.
    var onCommit: (@Sendable (CommittedChanges) -> Void)?
    /// Nudges the checkpointer as the log grows, and keeps the log bounded.
    private let logWatch: LogWatch

    init(db: Database, config: StoreConfiguration, catalog: Catalog, clock: HybridClock, lastSeq: Int64,
         logWatch: LogWatch) {
        self.db = db
        self.config = config
        self.catalog = catalog
        self.clock = clock
        self.clockCeiling = clock.last
        self.committedSeq = lastSeq
        self.seq = lastSeq
        self.logWatch = logWatch
    }

    var node: NodeID { clock.node }

    // MARK: Transactions

    /// Runs the jobs in one transaction. One job's failure rolls back only that job (a savepoint
    /// each when there are several); a failed commit fails them all.
    func runBatch(_ batch: [WriteQueue.Job]) {
        do {
            try db.cached("BEGIN IMMEDIATE").run()
        } catch {
            for job in batch { job.failure = error }
            return
        }
        let seqBefore = seq
        if batch.count == 1 {
            let job = batch[0]
            do {
                try job.work(self)
                afterCommit += jobAfterCommit
                batchChanges += jobChanges
            } catch {
                job.failure = error
                try? db.execute("ROLLBACK")
                jobAfterCommit.removeAll()
                jobChanges.removeAll()
                seq = seqBefore
                return
            }
            jobAfterCommit.removeAll()
            jobChanges.removeAll()
        } else {
            for job in batch {
                let jobSeq = seq
                do {
                    try db.cached("SAVEPOINT job").run()
                    try job.work(self)
                    try db.cached("RELEASE job").run()
                    afterCommit += jobAfterCommit
                    batchChanges += jobChanges
                } catch {
                    job.failure = error
                    try? db.cached("ROLLBACK TO job").run()
                    try? db.cached("RELEASE job").run()
                    seq = jobSeq
                }
                jobAfterCommit.removeAll()
                jobChanges.removeAll()
            }
        }
        do {
            var ceiling = clockCeiling
            if clock.last >= clockCeiling {
                ceiling = Stamp(millis: clock.last.millis &+ Self.clockLeaseMillis, counter: 0, node: clock.node)
                if ceiling <= clock.last { ceiling = clock.last }   // at the end of the stamp range
                let statement = try db.cached("INSERT OR REPLACE INTO engine_state (key, value) VALUES ('clock', ?)")
                statement.bind(1, ceiling.text)
                try statement.run()
            }
            try db.cached("COMMIT").run()
            clockCeiling = ceiling
        } catch {
            try? db.execute("ROLLBACK")
            for job in batch where job.failure == nil { job.failure = error }
            afterCommit.removeAll()
            batchChanges.removeAll()
            seq = seqBefore
            return
        }
        logWatch.afterCommit()
        let actions = afterCommit
        afterCommit.removeAll()
        for action in actions { action() }
        let candidates = takeUnreferenced()
        if !candidates.isEmpty { collectAttachments(candidates) }
        let changes = batchChanges
        batchChanges.removeAll(keepingCapacity: true)
        if seq != committedSeq {
            let commit = CommittedChanges(after: committedSeq, through: seq, records: changes)
            committedSeq = seq
            onCommit?(commit)
        }
    }

    /// A mark in the current job's after-commit work and changes, for `discardJobEffects(since:)`.
    struct JobEffectsMark {
        fileprivate var actions: Int
        fileprivate var changes: Int
    }

    var jobEffectsMark: JobEffectsMark { JobEffectsMark(actions: jobAfterCommit.count, changes: jobChanges.count) }

    /// Forgets the after-commit work and the changes registered since `mark`, whose writes a
    /// savepoint rolled back (`Store.perform` rolls back one operation of a job).
    func discardJobEffects(since mark: JobEffectsMark) {
        if jobAfterCommit.count > mark.actions { jobAfterCommit.removeSubrange(mark.actions...) }
        if jobChanges.count > mark.changes { jobChanges.removeSubrange(mark.changes...) }
    }

    /// Registers work to run after the current job's transaction commits.
    func whenCommitted(_ action: @escaping () -> Void) {
        jobAfterCommit.append(action)
    }

    private func nextSeq() -> Int64 {
        seq += 1
        return seq
    }

    private var nowMillis: Int64 { config.wallClock() }

    // MARK: Record lookup

    struct Current {
        var rid: Int64
        var version: RecordVersion
        var seq: Int64
    }

    func current(sid: Int64, entity: String, id: String) throws -> Current? {
        let statement = try db.cached(
            "SELECT rid, hlc, deleted, payload, attachments, seq FROM records WHERE sid = ? AND entity = ? AND id = ?")
        statement.bind(1, sid)
        statement.bind(2, entity)
        statement.bind(3, id)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        let hlcText = statement.text(1) ?? ""
        guard let hlc = Stamp.parse(hlcText) else {
            throw FerryError.storage(context: "reading \(entity)/\(id)", message: "stored stamp \(hlcText) is malformed")
        }
        let version = RecordVersion(
            entity: entity, id: id, hlc: hlc, deleted: statement.bool(2),
            payload: statement.text(3), attachments: AttachmentList.decode(statement.text(4)))
        return Current(rid: statement.int64(0), version: version, seq: statement.int64(5))
    }

    // MARK: Writing versions

    /// Inserts `version` as a new record, unless the record exists (then it writes nothing and
    /// returns nil). The common case of a write, a new record, costs no lookup this way.
    private func insertIfNew(_ version: RecordVersion, hlcText: String, sid: Int64, origin: ChangeOrigin) throws -> (rid: Int64, seq: Int64)? {
        let seq = self.seq + 1
        let statement = try db.cached("""
            INSERT INTO records (sid, entity, id, hlc, deleted, payload, attachments, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (sid, entity, id) DO NOTHING
            """)
        statement.bind(1, sid)
        statement.bind(2, version.entity)
        statement.bind(3, version.id)
        statement.bind(4, hlcText)
        statement.bind(5, version.deleted)
        statement.bind(6, version.payload)
        statement.bind(7, AttachmentList.encode(version.attachments))
        statement.bind(8, seq)
        try statement.run()
        guard db.changes == 1 else { return nil }
        self.seq = seq
        let rid = db.lastInsertRowID
        try logChange(seq: seq, rid: rid, sid: sid, origin: origin, version: version)
        try adjustReferences(sid: sid, removing: [], adding: version.attachments, requirePresent: origin == .local, current: true)
        return (rid, seq)
    }

    /// Makes `version` the current version of the existing record `current` and logs the change.
    private func replace(_ current: Current, with version: RecordVersion, hlcText: String, sid: Int64, origin: ChangeOrigin) throws -> Int64 {
        let seq = nextSeq()
        let statement = try db.cached(
            "UPDATE records SET hlc = ?, deleted = ?, payload = ?, attachments = ?, seq = ? WHERE rid = ?")
        statement.bind(1, hlcText)
        statement.bind(2, version.deleted)
        statement.bind(3, version.payload)
        statement.bind(4, AttachmentList.encode(version.attachments))
        statement.bind(5, seq)
        statement.bind(6, current.rid)
        try statement.run()
        try logChange(seq: seq, rid: current.rid, sid: sid, origin: origin, version: version)
        // The row of the change this one supersedes is never read again (readers skip it), so
        // it goes: the log keeps one row per record, not one per change ever made.
        let superseded = try db.cached("DELETE FROM changes WHERE seq = ?")
        superseded.bind(1, current.seq)
        try superseded.run()
        try adjustReferences(sid: sid, removing: current.version.attachments, adding: version.attachments,
                             requirePresent: origin == .local, current: true)
        return seq
    }

    /// Logs the change that made `version` current, in the table and for `onCommit`.
    private func logChange(seq: Int64, rid: Int64, sid: Int64, origin: ChangeOrigin, version: RecordVersion) throws {
        let change = try db.cached("INSERT INTO changes (seq, rid, sid, origin) VALUES (?, ?, ?, ?)")
        change.bind(1, seq)
        change.bind(2, rid)
        change.bind(3, sid)
        change.bind(4, origin == .local ? "local" : origin.description)
        try change.run()
        jobChanges.append(Record(space: catalog.name(of: sid), version: version, seq: seq))
    }

    /// A local write: stamps after the current version, stores, logs (which is what queues it
    /// for every transport). (The caller validated the input.)
    func putLocal(sid: Int64, space: String, entity: String, id: String, payload: String?, deleted: Bool,
                  attachments: [String]) throws -> Record {
        if !deleted {
            // A new record needs no lookup: insert, and fall back when it exists.
            let version = RecordVersion(entity: entity, id: id, hlc: clock.now(), deleted: false, payload: payload, attachments: attachments)
            let hlcText = version.hlc.text
            if let (_, seq) = try insertIfNew(version, hlcText: hlcText, sid: sid, origin: .local) {
                return Record(space: space, version: version, seq: seq)
            }
        }
        let current = try current(sid: sid, entity: entity, id: id)
        if config.immutableEntities.contains(entity), let current {
            if !(deleted && current.version.deleted) {
                throw FerryError.immutableRecord(entity: entity, id: id)
            }
        }
        if deleted, let current, current.version.deleted {
            // Deleting a tombstone again changes nothing.
            return Record(space: space, version: current.version, seq: current.seq)
        }
        let hlc = clock.stamp(after: current?.version.hlc)
        if let current, hlc <= current.version.hlc {
            throw FerryError.invalidStamp(current.version.hlc.text,
                                          reason: "the record's stamp is the largest possible, so no newer version of it can be made; write a new record")
        }
        let version = RecordVersion(entity: entity, id: id, hlc: hlc, deleted: deleted, payload: payload, attachments: attachments)
        let hlcText = hlc.text
        let seq: Int64
        if let current {
            seq = try replace(current, with: version, hlcText: hlcText, sid: sid, origin: .local)
        } else if let inserted = try insertIfNew(version, hlcText: hlcText, sid: sid, origin: .local) {
            seq = inserted.seq
        } else {
            throw FerryError.storage(context: "writing \(entity)/\(id)", message: "the record appeared during the write")
        }
        return Record(space: space, version: version, seq: seq)
    }

    /// Merges a version that came from elsewhere with the merge rules.
    /// - Parameter originHasRefusals: the transport it came through refused something (a
    ///   refusal of this record's stamp or an older one is then cleared); false spares each
    ///   version that check.
    func apply(_ incoming: RecordVersion, sid: Int64, origin: ChangeOrigin, originHasRefusals: Bool = false) throws -> ApplyResult {
        clock.observe(incoming.hlc)
        let hlcText = incoming.hlc.text
        // A record new here is applied whatever its stamp: insert first, look up only on conflict.
        if let (_, seq) = try insertIfNew(incoming, hlcText: hlcText, sid: sid, origin: origin) {
            return .applied(seq: seq)
        }
        guard let current = try current(sid: sid, entity: incoming.entity, id: incoming.id) else {
            throw FerryError.storage(context: "applying \(incoming.entity)/\(incoming.id)", message: "the record vanished during the write")
        }
        let immutable = config.immutableEntities.contains(incoming.entity)
        switch Merge.decide(current: current.version.hlc, incoming: incoming.hlc, immutable: immutable) {
        case .duplicate:
            if originHasRefusals { try clearRefusal(rid: current.rid, origin: origin, hlcText: hlcText) }
            return .duplicate
        case .lose:
            if current.version.hlc.node != incoming.hlc.node {
                try keepLoser(incoming, sid: sid, rid: current.rid, origin: origin, winner: current.version.hlc)
            }
            return .lost
        case .apply:
            if current.version.hlc.node != incoming.hlc.node {
                let replacedOrigin = try originOf(seq: current.seq)
                try keepLoser(current.version, sid: sid, rid: current.rid, origin: replacedOrigin, winner: incoming.hlc)
            }
            let seq = try replace(current, with: incoming, hlcText: hlcText, sid: sid, origin: origin)
            if originHasRefusals { try clearRefusal(rid: current.rid, origin: origin, hlcText: hlcText) }
            return .applied(seq: seq)
        }
    }

    /// After a job that applied versions received through `transport` of space `sid`: when
    /// the transport's push cursor stood at `before` (it had every change up to there), it
    /// has every change up to now, since the job's changes came from it. Saves its push loop
    /// from reading them only to skip them.
    func catchUpPushCursor(sid: Int64, transport: String, before: Int64) throws {
        guard seq > before else { return }
        let statement = try db.cached("UPDATE transports SET sent = ? WHERE sid = ? AND name = ? AND sent = ?")
        statement.bind(1, seq)
        statement.bind(2, sid)
        statement.bind(3, transport)
        statement.bind(4, before)
        try statement.run()
    }

    /// A version that came through transport T is on T: a refusal by T of that stamp or an
    /// older one no longer stands (nothing is pushed to T for it, so nothing else clears it).
    private func clearRefusal(rid: Int64, origin: ChangeOrigin, hlcText: String) throws {
        guard case .remote(let transport) = origin else { return }
        let statement = try db.cached(
            "DELETE FROM outbox_delivery WHERE rid = ? AND transport = ? AND error IS NOT NULL AND error_hlc <= ?")
        statement.bind(1, rid)
        statement.bind(2, transport)
        statement.bind(3, hlcText)
        try statement.run()
    }

    /// The seq of the latest change written, committed or not.
    var lastSeq: Int64 { seq }

    private func originOf(seq: Int64) throws -> ChangeOrigin {
        let statement = try db.cached("SELECT origin FROM changes WHERE seq = ?")
        statement.bind(1, seq)
        defer { statement.reset() }
        guard try statement.step(), let text = statement.text(0) else { return .local }
        return ChangeOrigin(parsing: text)
    }

    // MARK: Losing versions

    private func keepLoser(_ version: RecordVersion, sid: Int64, rid: Int64, origin: ChangeOrigin, winner: Stamp) throws {
        guard config.conflictHistory > 0 else { return }
        // The same losing version arriving again (through another transport, or replayed) is
        // kept once.
        let insert = try db.cached("""
            INSERT OR IGNORE INTO losers (rid, hlc, deleted, payload, attachments, origin, winner_hlc, lost_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        insert.bind(1, rid)
        insert.bind(2, version.hlc.text)
        insert.bind(3, version.deleted)
        insert.bind(4, version.payload)
        insert.bind(5, AttachmentList.encode(version.attachments))
        insert.bind(6, origin.description)
        insert.bind(7, winner.text)
        insert.bind(8, nowMillis)
        try insert.run()
        guard db.changes > 0 else { return }
        try adjustReferences(sid: sid, removing: [], adding: version.attachments, requirePresent: false, current: false)
        // Keep only the newest `conflictHistory` per record.
        let old = try db.cached("SELECT lid, attachments FROM losers WHERE rid = ? ORDER BY lid DESC LIMIT -1 OFFSET ?")
        old.bind(1, rid)
        old.bind(2, config.conflictHistory)
        var drop: [(Int64, [String])] = []
        while try old.step() { drop.append((old.int64(0), AttachmentList.decode(old.text(1)))) }
        old.reset()
        for (lid, attachments) in drop {
            let delete = try db.cached("DELETE FROM losers WHERE lid = ?")
            delete.bind(1, lid)
            try delete.run()
            try adjustReferences(sid: sid, removing: attachments, adding: [], requirePresent: false, current: false)
        }
    }

    // MARK: Outbox refusals

    /// Transport `transport` stored version `hlc` of record `rid` ahead of its cursor: a
    /// refusal of that version or an older one goes with it.
    func recordAcknowledgement(rid: Int64, transport: String, hlc: Stamp) throws {
        let statement = try db.cached("""
            INSERT INTO outbox_delivery (rid, transport, acked_hlc, error, error_hlc, updated_at) VALUES (?1, ?2, ?3, NULL, NULL, ?4)
            ON CONFLICT (rid, transport) DO UPDATE SET acked_hlc = max(coalesce(acked_hlc, ''), excluded.acked_hlc),
              error = CASE WHEN error_hlc <= excluded.acked_hlc THEN NULL ELSE error END,
              error_hlc = CASE WHEN error_hlc <= excluded.acked_hlc THEN NULL ELSE error_hlc END,
              updated_at = excluded.updated_at
            """)
        statement.bind(1, rid)
        statement.bind(2, transport)
        statement.bind(3, hlc.text)
        statement.bind(4, nowMillis)
        try statement.run()
    }

    func recordRejection(rid: Int64, transport: String, hlc: Stamp, error: String) throws {
        let statement = try db.cached("""
            INSERT INTO outbox_delivery (rid, transport, acked_hlc, error, error_hlc, updated_at) VALUES (?, ?, NULL, ?, ?, ?)
            ON CONFLICT (rid, transport) DO UPDATE SET error = excluded.error, error_hlc = excluded.error_hlc,
              updated_at = excluded.updated_at
            """)
        statement.bind(1, rid)
        statement.bind(2, transport)
        statement.bind(3, String(error.prefix(4096)))
        statement.bind(4, hlc.text)
        statement.bind(5, nowMillis)
        try statement.run()
    }

    // MARK: Attachment references

    /// Counts references: every current or losing version referencing an attachment holds one,
    /// in `attachments.refs` and in its space's count (`attachment_refs`, dropped at zero), and
    /// a current version (`current`) in the space's count of current ones too. When that goes
    /// to zero, the space's transports get a note to remove the blob (`blob_deletions`): a
    /// losing version is this device's history, whose bytes stay here (restored, it uploads
    /// them again), not a reason for the transports to keep the blob. A current reference drops
    /// the notes. A local write may only reference attachments the store has.
    func adjustReferences(sid: Int64, removing old: [String], adding new: [String], requirePresent: Bool, current: Bool) throws {
        let c: Int64 = current ? 1 : 0
        if old.isEmpty && new.isEmpty { return }
        let oldSet = Set(old), newSet = Set(new)
        for sha in newSet.subtracting(oldSet).sorted() {
            if requirePresent {
                let check = try db.cached("SELECT present FROM attachments WHERE sha256 = ?")
                check.bind(1, sha)
                let present = try check.step() && check.bool(0)
                check.reset()
                if !present { throw FerryError.attachmentNotStored(sha256: sha) }
            }
            let statement = try db.cached("""
                INSERT INTO attachments (sha256, size, refs, present, touched_at) VALUES (?, 0, 1, 0, ?)
                ON CONFLICT (sha256) DO UPDATE SET refs = refs + 1, touched_at = excluded.touched_at
                """)
            statement.bind(1, sha)
            statement.bind(2, nowMillis / 1000)
            try statement.run()
            let space = try db.cached("""
                INSERT INTO attachment_refs (sha256, sid, refs, current) VALUES (?1, ?2, 1, ?3)
                ON CONFLICT (sha256, sid) DO UPDATE SET refs = refs + 1, current = current + ?3
                """)
            space.bind(1, sha)
            space.bind(2, sid)
            space.bind(3, c)
            try space.run()
            if current {
                // Referenced again: its transports keep the blob.
                let kept = try db.cached("DELETE FROM blob_deletions WHERE sid = ? AND sha256 = ?")
                kept.bind(1, sid)
                kept.bind(2, sha)
                try kept.run()
            }
        }
        let dropped = oldSet.subtracting(newSet)
        for sha in dropped.sorted() {
            let statement = try db.cached("UPDATE attachments SET refs = max(refs - 1, 0) WHERE sha256 = ?")
            statement.bind(1, sha)
            try statement.run()
            let space = try db.cached("""
                UPDATE attachment_refs SET refs = refs - 1, current = max(current - ?3, 0) WHERE sha256 = ?1 AND sid = ?2 RETURNING current
                """)
            space.bind(1, sha)
            space.bind(2, sid)
            space.bind(3, c)
            let left: Int64? = try space.step() ? space.int64(0) : nil
            space.reset()
            let gone = try db.cached("DELETE FROM attachment_refs WHERE sha256 = ? AND sid = ? AND refs <= 0")
            gone.bind(1, sha)
            gone.bind(2, sid)
            try gone.run()
            if current && (left ?? 0) == 0 {
                // The space's last current reference went: each of its transports may drop the
                // blob later.
                let queue = try db.cached("""
                    INSERT INTO blob_deletions (sid, sha256, transport, since) SELECT ?1, ?2, name, ?3 FROM transports WHERE sid = ?1
                    ON CONFLICT (sid, sha256, transport) DO UPDATE SET since = excluded.since
                    """)
                queue.bind(1, sid)
                queue.bind(2, sha)
                queue.bind(3, nowMillis / 1000)
                try queue.run()
            }
        }
        if !dropped.isEmpty {
            let store = self
            whenCommitted { store.unreferenced.formUnion(dropped) }
        }
    }

    /// Attachments whose last reference went away since the last call.
    private func takeUnreferenced() -> Set<String> {
        defer { unreferenced.removeAll() }
        return unreferenced
    }

    /// Removes the metadata and files of attachments that nothing references and that were not
    /// uploaded or referenced within the grace period, in a transaction of its own. Best effort:
    /// what fails here is retried by the next sweep.
    func collectAttachments(_ candidates: Set<String>) {
        do {
            try db.execute("BEGIN IMMEDIATE")
            let removed = try unreferencedAttachments(among: candidates)
            try db.execute("COMMIT")
            for sha in removed { AttachmentFiles.remove(sha, root: config.attachmentsPath) }
        } catch {
            try? db.execute("ROLLBACK")
        }
    }

    /// Deletes the rows of unreferenced attachments past the grace period (all of them, or those
    /// among `candidates`) inside the current transaction, and returns them; the caller removes
    /// the files once that transaction committed.
    func unreferencedAttachments(among candidates: Set<String>?) throws -> [String] {
        let cutoff = nowMillis / 1000 - config.attachmentGraceSeconds
        var removed: [String] = []
        if let candidates {
            let statement = try db.cached("DELETE FROM attachments WHERE sha256 = ? AND refs = 0 AND touched_at <= ?")
            for sha in candidates.sorted() {
                statement.bind(1, sha)
                statement.bind(2, cutoff)
                try statement.run()
                if db.changes > 0 { removed.append(sha) }
            }
        } else {
            let select = try db.prepare("SELECT sha256 FROM attachments WHERE refs = 0 AND touched_at <= ?")
            select.bind(1, cutoff)
            while try select.step() { if let sha = select.text(0) { removed.append(sha) } }
            let statement = try db.cached("DELETE FROM attachments WHERE sha256 = ?")
            for sha in removed {
                statement.bind(1, sha)
                try statement.run()
            }
        }
        return removed
    }
}

/// The attachment list of a version as stored: a JSON array of hex strings, or NULL when empty.
enum AttachmentList {
    static func encode(_ list: [String]) -> String? {
        guard !list.isEmpty else { return nil }
        return "[" + list.map { "\"\($0)\"" }.joined(separator: ",") + "]"
    }

    static func decode(_ text: String?) -> [String] {
        guard let text, text.count > 2 else { return [] }
        return text.dropFirst().dropLast().split(separator: ",").map { String($0.dropFirst().dropLast()) }
    }
}
