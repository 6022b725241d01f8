import FerryCrypto
import FerryModel
import Glibc

extension Store {
    /// What the store knows of one attachment.
    public struct AttachmentInfo: Sendable, Hashable {
        public var sha256: String
        public var size: Int
        /// How many current or losing versions reference it.
        public var references: Int
        /// False while a remote record references it but its bytes were not fetched yet.
        public var present: Bool
    }

    /// Stores attachment bytes under their SHA-256 (verified against `expectedSHA256` when
    /// given). Idempotent. An attachment nothing references is kept for the grace period, so an
    /// app uploads first and then writes the record that references it.
    /// - Throws: `attachmentTooLarge`, `attachmentMismatch`, `storage`.
    @discardableResult
    public func putAttachment(_ bytes: [UInt8], expectedSHA256: String? = nil) throws(FerryError) -> AttachmentInfo {
        if bytes.count > configuration.maxAttachmentBytes {
            throw .attachmentTooLarge(size: bytes.count, limit: configuration.maxAttachmentBytes)
        }
        let sha = try AttachmentFiles.write(bytes, expected: expectedSHA256, root: configuration.attachmentsPath)
        return try registerAttachment(sha: sha, size: bytes.count)
    }

    /// Stores the file at `path` as an attachment, streaming it (memory stays bounded).
    @discardableResult
    public func putAttachment(fromFile path: String, expectedSHA256: String? = nil) throws(FerryError) -> AttachmentInfo {
        let (sha, size) = try AttachmentFiles.copy(from: path, expected: expectedSHA256,
                                                   maxBytes: configuration.maxAttachmentBytes,
                                                   root: configuration.attachmentsPath)
        return try registerAttachment(sha: sha, size: size)
    }

    private func registerAttachment(sha: String, size: Int) throws(FerryError) -> AttachmentInfo {
        let now = configuration.wallClock() / 1000
        return try write("registering attachment \(sha)") { writer in
            let statement = try writer.db.cached("""
                INSERT INTO attachments (sha256, size, refs, present, touched_at) VALUES (?, ?, 0, 1, ?)
                ON CONFLICT (sha256) DO UPDATE SET size = excluded.size, present = 1, touched_at = excluded.touched_at
                RETURNING refs
                """)
            statement.bind(1, sha); statement.bind(2, size); statement.bind(3, now)
            let refs = try statement.step() ? statement.int(0) : 0
            statement.reset()
            return AttachmentInfo(sha256: sha, size: size, references: refs, present: true)
        }
    }

    /// The metadata of an attachment, or nil when the store has never heard of it.
    public func attachment(_ sha256: String) throws(FerryError) -> AttachmentInfo? {
        try read("reading attachment \(sha256)") { db in
            let statement = try db.cached("SELECT size, refs, present FROM attachments WHERE sha256 = ?")
            defer { statement.reset() }
            statement.bind(1, sha256)
            guard try statement.step() else { return nil }
            return AttachmentInfo(sha256: sha256, size: statement.int(0), references: statement.int(1), present: statement.bool(2))
        }
    }

    /// The attachments that current or losing versions of `space` reference but whose bytes are
    /// not here (remote records applied before their blobs arrived), in SHA-256 order after
    /// `after`, at most `limit`. The sync engine looks for these again; storing one
    /// (`putAttachment`) makes it present. A page reads only missing attachments (from their
    /// index, schema version 5), each looked up among the space's references: its cost does not
    /// grow with the space's records, nor with the attachments that are here.
    /// - Throws: `spaceNotFound`, `storage`.
    public func missingAttachments(space: String = Store.privateSpace, after: String? = nil,
                                   limit: Int = 100) throws(FerryError) -> [String] {
        let sid = try catalog.sid(space)
        return try read("listing missing attachments") { db in
            let statement = try db.cached(Self.missingAttachmentsSQL)
            defer { statement.reset() }
            statement.bind(1, sid); statement.bind(2, max(1, limit)); statement.bind(3, after ?? "")
            var out: [String] = []
            while try statement.step() { if let sha = statement.text(0) { out.append(sha) } }
            return out
        }
    }

    /// `missingAttachments`: ?1 the space, ?2 the limit, ?3 the SHA-256 to list after.
    static let missingAttachmentsSQL: StaticString = """
        SELECT a.sha256 FROM attachments a INDEXED BY attachments_missing
        WHERE a.present = 0 AND a.refs > 0 AND a.sha256 > ?3
          AND EXISTS (SELECT 1 FROM attachment_refs s WHERE s.sha256 = a.sha256 AND s.sid = ?1)
        ORDER BY a.sha256 LIMIT ?2
        """

    /// `referencedAttachments`: ?1 the space, ?2 the rid to read after, ?3 the limit, ?4 the
    /// greatest change seq of the versions read.
    static let referencedAttachmentsSQL: StaticString = """
        SELECT rid, attachments FROM records WHERE sid = ?1 AND rid > ?2 AND attachments IS NOT NULL AND seq <= ?4
        ORDER BY rid LIMIT ?3
        """

    /// The attachments the current records of `space` reference, going through its records that
    /// reference any in pages of `limit` by rid, after `afterRID`: the page's attachments (each
    /// once) and the last rid read (nil when no such record is left). Each page is read in rid
    /// order from the index of records with attachments, so a whole pass is linear in those
    /// records and costs nothing for the others.
    ///
    /// With `sentTo`, only records whose current version that transport of the space has been
    /// sent (its push cursor is past the version's change; none for a transport it does not
    /// have): the push puts the blobs of the others before them.
    public func referencedAttachments(space: String = Store.privateSpace, afterRID: Int64, limit: Int = 1000,
                                      sentTo transport: String? = nil) throws(FerryError) -> (shas: [String], last: Int64?) {
        let sid = try catalog.sid(space)
        return try read("listing attachments", slow: true) { db in
            var through = Int64.max
            if let transport {
                guard let cursor = try Self.pushCursor(sid: sid, transport: transport, in: db) else { return ([], nil) }
                through = cursor.sent
            }
            let statement = try db.cached(Self.referencedAttachmentsSQL)
            defer { statement.reset() }
            statement.bind(1, sid); statement.bind(2, afterRID); statement.bind(3, max(1, limit)); statement.bind(4, through)
            var shas: [String] = []
            var seen = Set<String>()
            var last: Int64?
            while try statement.step() {
                last = statement.int64(0)
                for sha in AttachmentList.decode(statement.text(1)) where seen.insert(sha).inserted { shas.append(sha) }
            }
            return (shas, last)
        }
    }

    /// The path of an attachment's file, for streaming it out; nil when its bytes are not here.
    public func attachmentPath(_ sha256: String) -> String? {
        guard Names.isSHA256Hex(sha256) else { return nil }
        let path = AttachmentFiles.path(sha256, root: configuration.attachmentsPath)
        var info = stat()
        guard stat(path, &info) == 0 else {
            // Its file went behind ferryd's back while the store says it is here: missing now.
            if errno == ENOENT, ((try? attachment(sha256)) ?? nil)?.present == true { try? setAttachmentAside(sha256) }
            return nil
        }
        // Cut short or grown behind ferryd's back (a size is cheap to check; a hash is checked
        // where the bytes are read: `readAttachment`, and sealing for a transport or a bundle).
        if let known = (try? attachment(sha256)) ?? nil, known.present, Int(info.st_size) != known.size {
            try? setAttachmentAside(sha256)
            return nil
        }
        return path
    }

    /// An attachment's bytes, checked against its SHA-256.
    /// - Throws: `attachmentMissing`; `attachmentDamaged` when they no longer hash to it (the
    ///   file was changed outside ferryd: it is set aside, `setAttachmentAside`);
    ///   `attachmentTooLarge` (over `maxBytes`).
    public func readAttachment(_ sha256: String, maxBytes: Int = 16 << 20) throws(FerryError) -> [UInt8] {
        guard Names.isSHA256Hex(sha256) else { throw .attachmentMissing(sha256: sha256.clipped(to: 80)) }
        let bytes = try AttachmentFiles.read(sha256, root: configuration.attachmentsPath, maxBytes: maxBytes)
        var hasher = SHA256()
        hasher.update(bytes)
        guard Hex.encode(hasher.finalize()) == sha256 else {
            try setAttachmentAside(sha256)
            throw .attachmentDamaged(sha256: sha256)
        }
        return bytes
    }

    /// Sets aside an attachment whose file on this device was found gone, cut short or changed
    /// outside ferryd: the file goes and the attachment counts as missing (`present` 0), so
    /// `missingAttachments` lists it, `Status` counts it, and the sync engine fetches it again
    /// from a transport that has it; storing the original file again (`putAttachment`) puts
    /// it back. Logged by the callers that can say where it was found.
    public func setAttachmentAside(_ sha256: String) throws(FerryError) {
        guard Names.isSHA256Hex(sha256) else { return }
        let root = configuration.attachmentsPath
        try write("setting aside attachment \(sha256)") { writer in
            AttachmentFiles.remove(sha256, root: root)
            let statement = try writer.db.cached("UPDATE attachments SET present = 0 WHERE sha256 = ? AND present = 1")
            statement.bind(1, sha256)
            try statement.run()
        }
    }

    /// Removes attachments nothing references once their grace period is over, files left by
    /// interrupted writes, and (with `orphanFiles`) files the store has no row for. A failed
    /// database sweep (a full disk) does not stop the file passes, which need no space and free
    /// some; it is thrown after them.
    public func sweepAttachments(orphanFiles: Bool = false) throws(FerryError) {
        let root = configuration.attachmentsPath
        var failure: FerryError?
        do {
            _ = try write("sweeping attachments") { writer in
                let removed = try writer.unreferencedAttachments(among: nil)
                writer.whenCommitted { for sha in removed { AttachmentFiles.remove(sha, root: root) } }
                return removed
            }
        } catch {
            // On a full disk this write fails; the file passes below need no space and free some.
            failure = error
        }
        guard orphanFiles else {
            if let failure { throw failure }
            return
        }
        AttachmentFiles.clearTemporary(root: root)
        let known: Set<String> = try read("listing attachments") { db in
            var set = Set<String>()
            let statement = try db.prepare("SELECT sha256 FROM attachments")
            while try statement.step() { if let s = statement.text(0) { set.insert(s) } }
            return set
        }
        for sha in AttachmentFiles.listAll(root: root) where !known.contains(sha) {
            AttachmentFiles.remove(sha, root: root)
        }
        if let failure { throw failure }
    }
}
