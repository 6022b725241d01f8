import FerrySQLite
import FerryTestSupport
import Foundation
import Testing
@testable import FerryModel
@testable import FerryStore

@Suite struct AttachmentTests {
    @Test func storedUnderTheirHashAndVerified() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        let info = try store.putAttachment(Array("hello".utf8))
        #expect(info.sha256 == sha256OfHello && info.size == 5)
        #expect(try store.readAttachment(sha256OfHello) == Array("hello".utf8))
        let path = try #require(store.attachmentPath(sha256OfHello))
        #expect(path.hasSuffix("/attachments/2c/" + sha256OfHello))
        #expect(throws: FerryError.attachmentMismatch(expected: String(repeating: "0", count: 64), actual: sha256OfHello)) {
            try store.putAttachment(Array("hello".utf8), expectedSHA256: String(repeating: "0", count: 64))
        }
        // Idempotent.
        #expect(try store.putAttachment(Array("hello".utf8), expectedSHA256: sha256OfHello).sha256 == sha256OfHello)
    }

    /// A file found changed, cut short or gone behind ferryd's back is set aside: it counts as
    /// missing (listed for the sync engine to fetch again) instead of being served; storing the
    /// original bytes again puts it back, also over a damaged copy not noticed yet.
    @Test func aFileDamagedOrGoneOutsideFerrydIsSetAsideAndPutBackByTheOriginal() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        let bytes = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let sha = try store.putAttachment(bytes).sha256
        _ = try store.put(entity: "doc", id: "1", payload: "{}", attachments: [sha])
        let path = try #require(store.attachmentPath(sha))
        func overwrite(_ content: [UInt8]) throws {
            chmod(path, 0o600)
            try Data(content).write(to: URL(fileURLWithPath: path))
        }
        // Changed, same size: the bytes read do not hash to the name.
        try overwrite([0x58] + bytes.dropFirst())
        #expect(throws: FerryError.attachmentDamaged(sha256: sha)) { try store.readAttachment(sha) }
        #expect(try store.attachment(sha)?.present == false && store.missingAttachments() == [sha])
        #expect(store.attachmentPath(sha) == nil && !FileManager.default.fileExists(atPath: path))
        #expect(try store.putAttachment(bytes).present && store.readAttachment(sha) == bytes && store.missingAttachments().isEmpty)
        // Cut short: its path is not handed out.
        try overwrite(Array(bytes.prefix(100)))
        #expect(store.attachmentPath(sha) == nil)
        #expect(try store.attachment(sha)?.present == false && store.missingAttachments() == [sha])
        _ = try store.putAttachment(fromFile: try writeTemp(bytes, in: dir))
        #expect(try store.readAttachment(sha) == bytes)
        // Gone.
        unlink(path)
        #expect(store.attachmentPath(sha) == nil)
        #expect(try store.attachment(sha)?.present == false && store.missingAttachments() == [sha])
        _ = try store.putAttachment(bytes)
        // Changed and not noticed yet: storing the original replaces it, from bytes or a file.
        try overwrite([0x58] + bytes.dropFirst())
        _ = try store.putAttachment(bytes)
        #expect(try store.readAttachment(sha) == bytes)
        try overwrite([0x59] + bytes.dropFirst())
        _ = try store.putAttachment(fromFile: try writeTemp(bytes, in: dir))
        #expect(try store.readAttachment(sha) == bytes && store.attachment(sha)?.present == true)
    }

    /// When the last current or losing version of a space that references an attachment goes,
    /// each transport of that space gets a note to remove its blob, with the time; another
    /// space's references do not count; a new reference drops the notes at once; a note goes
    /// when its transport removed the blob (a newer one stays), or with its transport.
    @Test func theLastReferenceInASpaceNotesItsBlobForEachTransport() throws {
        let dir = TempDir(), wall = TestWall()
        let store = try makeStore(dir, wall: wall)
        try store.addTransport(name: "folder", kind: "folder")
        try store.addTransport(name: "relay", kind: "relay")
        _ = try store.createSpace(name: "team")
        try store.addTransport(space: "team", name: "folder", kind: "folder")
        let a = try store.putAttachment(Array("a".utf8)).sha256, b = try store.putAttachment(Array("b".utf8)).sha256
        func due(_ transport: String, space: String = Store.privateSpace, before: Int64) throws -> [String] {
            try store.blobDeletions(space: space, transport: transport, unreferencedBefore: before)
        }
        _ = try store.put(entity: "doc", id: "1", payload: "{}", attachments: [a, b])
        _ = try store.put(entity: "doc", id: "2", payload: "{}", attachments: [a])
        _ = try store.put(space: "team", entity: "doc", id: "1", payload: "{}", attachments: [b])
        let t0 = wall.read() / 1000
        #expect(try due("folder", before: t0 + 1).isEmpty)
        // Doc 1 drops b: its last reference in the private space (the team's is another space's).
        _ = try store.put(entity: "doc", id: "1", payload: "{}", attachments: [a])
        #expect(try due("folder", before: t0 + 1) == [b] && due("relay", before: t0 + 1) == [b])
        #expect(try due("folder", before: t0).isEmpty)
        #expect(try due("folder", space: "team", before: t0 + 1).isEmpty)
        // a stays referenced by doc 2 when doc 1 goes.
        _ = try store.delete(entity: "doc", id: "1")
        #expect(try due("folder", before: t0 + 1) == [b])
        wall.advance(5000)
        _ = try store.delete(entity: "doc", id: "2")
        #expect(try due("folder", before: t0 + 100) == [b, a])  // oldest first
        #expect(try due("folder", before: t0 + 5) == [b])
        // Referenced again: its notes go at once, for every transport.
        _ = try store.put(entity: "doc", id: "3", payload: "{}", attachments: [b])
        #expect(try due("folder", before: t0 + 100) == [a] && due("relay", before: t0 + 100) == [a])
        // Removed from the folder: the folder's note goes, the relay's stays.
        try store.blobsDeleted(transport: "folder", shas: [a], unreferencedBefore: t0 + 100)
        #expect(try due("folder", before: t0 + 100).isEmpty && due("relay", before: t0 + 100) == [a])
        // A note newer than the removal's cutoff stays.
        wall.advance(20_000)
        _ = try store.delete(entity: "doc", id: "3")
        try store.blobsDeleted(transport: "folder", shas: [b], unreferencedBefore: t0 + 10)
        #expect(try due("folder", before: t0 + 100) == [b])
        // The team's last reference goes: the team's folder gets its own note.
        _ = try store.delete(space: "team", entity: "doc", id: "1")
        #expect(try due("folder", space: "team", before: t0 + 100) == [b])
        #expect(try store.blobDeletionCount(transport: "relay") == 2)
        try store.removeTransport(name: "relay")
        #expect(try store.blobDeletionCount(transport: "relay") == 0)
        #expect(try store.blobDeletionCount(transport: "folder") == 1)
        try store.restartTransport(name: "folder")
        #expect(try store.blobDeletionCount(transport: "folder") == 0)
        #expect(try store.blobDeletionCount(space: "team", transport: "folder") == 1)
    }

    /// A version that loses a merge is this device's history: it keeps the attachment's bytes
    /// here, not its blob on the transports. When a newer version from elsewhere drops the
    /// attachment, the local one it beats becomes a losing version and the blob is noted for
    /// removal all the same; a losing version being pruned does not note it again, and a
    /// restored one (a new current version) drops the note.
    @Test func aLosingVersionDoesNotKeepTheBlobOnTheTransports() throws {
        let dir = TempDir(), wall = TestWall()
        let store = try makeStore(dir, wall: wall)
        try store.addTransport(name: "relay", kind: "relay")
        let a = try store.putAttachment(Array("a".utf8)).sha256
        let mine = try store.put(entity: "doc", id: "L", payload: "{}", attachments: [a])
        let newer = RecordVersion(entity: "doc", id: "L", hlc: Stamp(millis: mine.hlc.millis + 1000, counter: 0, node: NodeID(99)),
                                  deleted: true, payload: nil, attachments: [])
        _ = try store.applyRemote([newer], origin: .remote(transport: "relay"))
        #expect(try store.conflicts(entity: "doc", id: "L").count == 1)
        #expect(try store.attachment(a)?.references == 1)   // the loser keeps the bytes here
        let t = wall.read() / 1000
        #expect(try store.blobDeletions(transport: "relay", unreferencedBefore: t + 1) == [a])
        _ = try store.put(entity: "doc", id: "L", payload: "{}", attachments: [a])
        #expect(try store.blobDeletions(transport: "relay", unreferencedBefore: t + 1).isEmpty)
    }

    /// A store of version 5 gets the count of current references per space, and a note for
    /// each attachment only losing versions referenced.
    @Test func version5CountsCurrentReferencesAndNotesLoserOnlyAttachments() throws {
        let dir = TempDir()
        let (a, b) = (String(repeating: "a", count: 64), String(repeating: "b", count: 64))
        do {
            let store = try makeStore(dir)
            try store.addTransport(name: "relay", kind: "relay")
            func version(_ id: String, _ millis: Int64, _ attachments: [String], node: UInt64 = 5) -> RecordVersion {
                RecordVersion(entity: "doc", id: id, hlc: Stamp(millis: millis, counter: 0, node: NodeID(node)), deleted: false,
                              payload: "{}", attachments: attachments)
            }
            _ = try store.applyRemote([version("K", 1, [a]), version("K2", 1, [a]), version("L", 1, [b])], origin: .remote(transport: "relay"))
            _ = try store.applyRemote([version("L", 2, [], node: 6)], origin: .remote(transport: "relay"))
            let db = try Database(path: dir.path + "/ferry.db")
            try StoreTests.downgradeToVersion5(db)
        }
        let store = try makeStore(dir)
        let db = try Database(path: dir.path + "/ferry.db")
        #expect(try db.scalarInt("SELECT current FROM attachment_refs WHERE sha256 = '\(a)'") == 2)
        #expect(try db.scalarInt("SELECT current FROM attachment_refs WHERE sha256 = '\(b)'") == 0)
        #expect(try store.blobDeletions(transport: "relay", unreferencedBefore: Int64(Date().timeIntervalSince1970) + 10) == [b])
    }

    @Test func streamsLargeFilesIn() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        let source = dir.path + "/big.bin"
        var bytes = [UInt8](repeating: 0, count: 3 << 20)
        for i in bytes.indices { bytes[i] = UInt8(truncatingIfNeeded: i &* 31) }
        FileManager.default.createFile(atPath: source, contents: Data(bytes))
        let info = try store.putAttachment(fromFile: source)
        #expect(info.size == bytes.count)
        #expect(FileManager.default.contents(atPath: store.attachmentPath(info.sha256)!) == Data(bytes))
        let limited = TempDir("limited")
        let small = try makeStore(limited) { $0.maxAttachmentBytes = 1 << 20 }
        #expect(throws: FerryError.self) { try small.putAttachment(fromFile: source) }
        #expect(AttachmentFiles.listAll(root: limited.path + "/attachments").isEmpty)
    }

    @Test func aRecordMayOnlyReferenceAttachmentsThatAreHere() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        let missing = String(repeating: "a", count: 64)
        let refused = #expect(throws: FerryError.attachmentNotStored(sha256: missing)) {
            try store.put(entity: "doc", id: "1", payload: "{}", attachments: [missing])
        }
        // On the wire it is AttachmentMissing, and it says what to do for a write.
        #expect(refused?.code == "AttachmentMissing" && refused?.description.contains("store its file first ('ferryctl attach FILE'") == true)
        #expect(try store.get(entity: "doc", id: "1") == nil)
        try store.putAttachment(Array("hello".utf8))
        let r = try store.put(entity: "doc", id: "1", payload: "{}", attachments: [sha256OfHello])
        #expect(r.attachments == [sha256OfHello])
        #expect(try store.attachment(sha256OfHello)?.references == 1)
    }

    @Test func removedWhenNothingReferencesThem() throws {
        let dir = TempDir()
        let wall = TestWall()
        let store = try makeStore(dir, wall: wall) { $0.attachmentGraceSeconds = 60 }
        try store.putAttachment(Array("hello".utf8))
        try store.put(entity: "doc", id: "1", payload: "{}", attachments: [sha256OfHello])
        try store.put(entity: "doc", id: "2", payload: "{}", attachments: [sha256OfHello])
        #expect(try store.attachment(sha256OfHello)?.references == 2)
        wall.advance(120_000)
        try store.put(entity: "doc", id: "1", payload: "{}")
        #expect(store.attachmentPath(sha256OfHello) != nil)   // doc 2 still references it
        try store.delete(entity: "doc", id: "2")
        #expect(store.attachmentPath(sha256OfHello) == nil)
        #expect(try store.attachment(sha256OfHello) == nil)
    }

    @Test func unreferencedUploadsSurviveTheGracePeriodThenGo() throws {
        let dir = TempDir()
        let wall = TestWall()
        let store = try makeStore(dir, wall: wall) { $0.attachmentGraceSeconds = 60 }
        try store.putAttachment(Array("hello".utf8))
        try store.sweepAttachments()
        #expect(store.attachmentPath(sha256OfHello) != nil)
        wall.advance(61_000)
        try store.sweepAttachments()
        #expect(store.attachmentPath(sha256OfHello) == nil)
    }

    /// On a full disk the store still opens (its sweep of unreferenced attachments is only
    /// housekeeping, and says why it failed), reads work, and once space is freed the next open
    /// sweeps. A real tmpfs of 8 MiB, filled to the last byte.
    @Test func aFullDiskDoesNotKeepTheStoreFromOpening() throws {
        let dir = TempDir()
        guard Glibc.mount("tmpfs", dir.path, "tmpfs", 0, "size=8m") == 0 else {
            Issue.record("mounting a tmpfs at \(dir.path) failed (errno \(errno)): this test needs root")
            return
        }
        defer { Glibc.umount2(dir.path, Int32(MNT_DETACH)) }
        let wall = TestWall()
        // Left open while the disk fills and the store opens again: its log and shared memory
        // stay, as after a kill -9 (a clean close removes them, and SQLite cannot make them
        // again on a full disk).
        let first = try makeStore(dir, wall: wall) { $0.attachmentGraceSeconds = 1 }
        _ = try first.put(entity: "note", id: "N1", payload: #"{"a":1}"#)
        for i in 0..<50 { try first.putAttachment([UInt8](repeating: UInt8(i), count: 20_000)) }   // unreferenced
        wall.advance(5_000)
        // A file the store has no row for (left by a crash): removed at open, full disk or not.
        let orphan = dir.path + "/attachments/ab/" + String(repeating: "ab", count: 32)
        try FileManager.default.createDirectory(atPath: dir.path + "/attachments/ab", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: orphan, contents: Data(repeating: 7, count: 10_000)))
        // Fill the file system.
        let filler = dir.path + "/filler"
        let fd = open(filler, O_WRONLY | O_CREAT, 0o600)
        let chunk = [UInt8](repeating: 1, count: 4096)
        while chunk.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        var one: UInt8 = 1
        while write(fd, &one, 1) > 0 {}
        close(fd)

        let full = try makeStore(dir, wall: wall) { $0.attachmentGraceSeconds = 1 }
        #expect(full.sweepFailure != nil)
        #expect(!FileManager.default.fileExists(atPath: orphan), "the file passes run although the database sweep failed")
        #expect(try full.get(entity: "note", id: "N1")?.version.payload == #"{"a":1}"#)
        #expect(throws: FerryError.self) { try full.put(entity: "note", id: "N2", payload: String(repeating: "x", count: 4 << 20)) }
        _ = consume full
        _ = consume first

        unlink(filler)
        let freed = try makeStore(dir, wall: wall) { $0.attachmentGraceSeconds = 1 }
        #expect(freed.sweepFailure == nil)
        #expect(try freed.stats().attachments == 0, "the next open swept them")
        #expect(try freed.put(entity: "note", id: "N2", payload: "{}").version.id == "N2")
    }

    @Test func orphanFilesAndTemporaryLeftoversAreRemovedOnOpen() throws {
        let dir = TempDir()
        do { _ = try makeStore(dir) }
        let root = dir.path + "/attachments"
        try FileManager.default.createDirectory(atPath: root + "/ab", withIntermediateDirectories: true)
        let orphan = root + "/ab/" + String(repeating: "ab", count: 32)
        FileManager.default.createFile(atPath: orphan, contents: Data("x".utf8))
        FileManager.default.createFile(atPath: root + "/tmp/partial", contents: Data("y".utf8))
        _ = try makeStore(dir)
        #expect(!FileManager.default.fileExists(atPath: orphan))
        #expect(!FileManager.default.fileExists(atPath: root + "/tmp/partial"))
    }

    @Test func remoteRecordsMayReferenceAttachmentsNotFetchedYet() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        let sha = String(repeating: "c", count: 64)
        let v = RecordVersion(entity: "doc", id: "R", hlc: Stamp(millis: 1, counter: 0, node: NodeID(5)), deleted: false,
                              payload: "{}", attachments: [sha])
        #expect(try store.applyRemote([v], origin: .remote(transport: "t")).first != nil)
        let info = try #require(try store.attachment(sha))
        #expect(info.references == 1 && !info.present)
    }

    /// The attachments a space's records reference but whose bytes are not here: the sync
    /// engine looks for these again. Storing one makes it present; a losing version's count too.
    @Test func missingAttachmentsAreListedBySpaceUntilStored() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.createSpace(name: "team")
        let bytes = Array("hello".utf8)
        let late = sha256OfHello
        let other = String(repeating: "d", count: 64)
        let lost = String(repeating: "e", count: 64)
        func version(_ id: String, _ millis: Int64, _ attachments: [String], node: UInt64 = 5) -> RecordVersion {
            RecordVersion(entity: "doc", id: id, hlc: Stamp(millis: millis, counter: 0, node: NodeID(node)), deleted: false,
                          payload: "{}", attachments: attachments)
        }
        #expect(try store.missingAttachments().isEmpty)
        _ = try store.applyRemote([version("A", 1, [late]), version("L", 1, [lost])], origin: .remote(transport: "t"))
        _ = try store.applyRemote(space: "team", [version("B", 1, [other])], origin: .remote(transport: "t"))
        // L's version with the attachment loses to a newer one without it, and is kept as a loser.
        _ = try store.applyRemote([version("L", 2, [], node: 6)], origin: .remote(transport: "t"))
        #expect(try store.missingAttachments() == [late, lost].sorted())
        #expect(try store.missingAttachments(space: "team") == [other])
        // The status counts only those a current version references (a losing version's blob
        // may be gone from the transports for good).
        #expect(try store.stats().attachmentsMissing == 2)
        #expect(try store.missingAttachments(limit: 1) == [[late, lost].min()!])
        #expect(try store.missingAttachments(after: [late, lost].min()!) == [[late, lost].max()!])
        try store.putAttachment(bytes, expectedSHA256: late)
        #expect(try store.missingAttachments() == [lost])
        #expect(try store.attachment(late)?.present == true)
    }

    /// Many records each missing their own attachments (a device that joined a folder whose old
    /// blobs are gone): every missing one is listed once, in order, page after page, and an
    /// attachment shared by several records or present is not.
    @Test func manyMissingAttachmentsPageInOrder() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.putAttachment(Array("hello".utf8), expectedSHA256: sha256OfHello)
        func sha(_ i: Int) -> String { String(format: "%064x", i * 7919) }
        let shared = String(repeating: "f", count: 64)
        let versions = (1...3000).map { i in
            RecordVersion(entity: "doc", id: "r\(i)", hlc: Stamp(millis: Int64(i), counter: 0, node: NodeID(5)), deleted: false,
                          payload: "{}", attachments: i % 3 == 0 ? [sha(i), shared, sha256OfHello] : [sha(i)])
        }
        _ = try store.applyRemote(versions, origin: .remote(transport: "t"))
        var listed: [String] = []
        var after: String?
        while true {
            let page = try store.missingAttachments(after: after, limit: 250)
            guard let last = page.last else { break }
            listed += page
            after = last
        }
        #expect(listed == ((1...3000).map(sha) + [shared]).sorted())
    }

    /// The check for blobs a transport lost pages through the records that reference
    /// attachments, in rid order: every current reference of the space comes, once a page,
    /// and none of another space or of a version no longer current.
    @Test func referencedAttachmentsPageThroughTheRecordsThatHaveAny() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.createSpace(name: "team")
        func sha(_ i: Int) -> String { String(format: "%064x", i) }
        func version(_ id: String, _ millis: Int64, _ attachments: [String]) -> RecordVersion {
            RecordVersion(entity: "doc", id: id, hlc: Stamp(millis: millis, counter: 0, node: NodeID(5)), deleted: false,
                          payload: "{}", attachments: attachments)
        }
        var expected = Set<String>()
        for i in 0..<60 {
            // Every third record has no attachment; every fifth has two.
            let attachments = i % 3 == 0 ? [] : (i % 5 == 0 ? [sha(i), sha(1000 + i)] : [sha(i)])
            _ = try store.applyRemote([version("R\(i)", 1, attachments)], origin: .remote(transport: "t"))
            _ = try store.applyRemote(space: "team", [version("T\(i)", 1, [sha(5000 + i)])], origin: .remote(transport: "t"))
            expected.formUnion(attachments)
        }
        // A newer version without its attachment: R1's is no longer referenced.
        _ = try store.applyRemote([version("R1", 2, [])], origin: .remote(transport: "t"))
        expected.remove(sha(1))
        for limit in [1, 7, 1000] {
            var listed: [String] = [], after: Int64 = 0, pages = 0
            while true {
                let page = try store.referencedAttachments(afterRID: after, limit: limit)
                guard let last = page.last else { break }
                #expect(last > after && !page.shas.isEmpty)
                listed += page.shas
                after = last
                pages += 1
            }
            #expect(Set(listed) == expected && listed.count == expected.count, "limit \(limit)")
            #expect(pages == (39 + limit - 1) / limit, "limit \(limit): 39 records reference attachments")
        }
    }

    /// The blob check reads the index of versions with attachments (schema version 4), never
    /// every record of the space: before, each page sorted the whole space. The list of
    /// missing attachments reads only missing ones, from their index (schema version 5), and
    /// looks each up among the space's references: no version is read at all.
    @Test func attachmentQueriesReadOnlyWhatTheyList() throws {
        let dir = TempDir()
        do { _ = try makeStore(dir) }
        let db = try Database(path: dir.path + "/ferry.db")
        func plan(_ sql: StaticString) throws -> String {
            let statement = try db.prepare("EXPLAIN QUERY PLAN \(sql)")
            var lines: [String] = []
            while try statement.step() { lines.append(statement.text(3) ?? "") }
            return lines.joined(separator: "; ")
        }
        let referenced = try plan(Store.referencedAttachmentsSQL)
        #expect(referenced.contains("records_with_attachments") && !referenced.contains("TEMP B-TREE"), "\(referenced)")
        let missing = try plan(Store.missingAttachmentsSQL)
        #expect(missing.contains("SEARCH a USING INDEX attachments_missing") && missing.contains("SEARCH s USING PRIMARY KEY")
                    && !missing.contains("records") && !missing.contains("losers") && !missing.contains("TEMP B-TREE"),
                "\(missing)")
    }

    /// Each space's reference counts (`attachment_refs`) follow every way a version gains or
    /// loses an attachment: new records, newer versions with other lists, losing versions kept
    /// and trimmed past the conflict history, in two spaces sharing attachments. After random
    /// writes they equal a count made from the versions themselves, and the missing list of each
    /// space is exactly what its versions reference and the store lacks.
    @Test func spaceReferenceCountsFollowEveryVersion() throws {
        let dir = TempDir()
        let store = try makeStore(dir) { $0.conflictHistory = 2 }
        try store.createSpace(name: "team")
        try store.putAttachment(Array("hello".utf8), expectedSHA256: sha256OfHello)
        var random = SplitMix64(seed: 0xA77AC4)
        let pool = (0..<40).map { String(format: "%064x", $0 * 104_729) } + [sha256OfHello]
        var everReferenced = Set<String>()
        for step in 0..<600 {
            let space = Bool.random(using: &random) ? Store.privateSpace : "team"
            let count = Int.random(in: 0...3, using: &random)
            let attachments = Array(Set((0..<count).map { _ in pool.randomElement(using: &random)! })).sorted()
            let deleted = Int.random(in: 0..<8, using: &random) == 0
            // Stamps from several nodes, some older than what is stored: losers are kept and trimmed.
            let stamp = Stamp(millis: Int64(step / 3 + Int.random(in: 0...40, using: &random)), counter: 0,
                              node: NodeID(UInt64.random(in: 1...4, using: &random)))
            let version = RecordVersion(entity: "doc", id: "r\(Int.random(in: 0..<25, using: &random))", hlc: stamp,
                                        deleted: deleted, payload: deleted ? nil : "{}", attachments: deleted ? [] : attachments)
            _ = try store.applyRemote(space: space, [version], origin: .remote(transport: "t"))
            for sha in version.attachments { everReferenced.insert("\(sha) \(space == "team" ? 2 : 1)") }
            if step % 150 == 149 { try store.putAttachment(Array("x\(step)".utf8)) }
        }
        let db = try Database(path: dir.path + "/ferry.db")
        func rows(_ sql: String) throws -> [String] {
            let statement = try db.prepare(sql)
            var out: [String] = []
            while try statement.step() { out.append("\(statement.text(0) ?? "") \(statement.int64(1)) \(statement.int64(2))") }
            return out
        }
        let counted = try rows("""
            SELECT sha256, sid, count(*) FROM (
                SELECT j.value AS sha256, r.sid AS sid FROM records r, json_each(r.attachments) j WHERE r.attachments IS NOT NULL
                UNION ALL
                SELECT j.value, r.sid FROM losers l JOIN records r ON r.rid = l.rid, json_each(l.attachments) j
                WHERE l.attachments IS NOT NULL)
            GROUP BY sha256, sid ORDER BY sha256, sid
            """)
        #expect(!counted.isEmpty)
        #expect(try db.scalarInt("SELECT count(*) FROM losers") ?? 0 > 0)
        // Some space stopped referencing some attachment altogether.
        #expect(Set(counted.map { String($0.split(separator: " ").prefix(2).joined(separator: " ")) }).count < everReferenced.count)
        #expect(try rows("SELECT sha256, sid, refs FROM attachment_refs ORDER BY sha256, sid") == counted)
        for space in [Store.privateSpace, "team"] {
            let sid = try #require(try db.scalarInt("SELECT sid FROM spaces WHERE name = '\(space)'"))
            let expected = try rows("""
                SELECT DISTINCT s.sha256, 0, 0 FROM attachment_refs s JOIN attachments a ON a.sha256 = s.sha256
                WHERE s.sid = \(sid) AND a.present = 0 ORDER BY 1
                """).map { String($0.prefix(64)) }
            #expect(try store.missingAttachments(space: space, limit: 1000) == expected)
            #expect(!expected.contains(sha256OfHello))
        }
    }

    /// A store of version 4 had no per-space counts: opened by this build, they are counted
    /// from the current and losing versions of each space, and each space lists its own
    /// missing attachments, also one another space references too.
    @Test func aStoreOfVersion4CountsEachSpacesReferences() throws {
        let dir = TempDir()
        let shared = String(repeating: "a", count: 64), mine = String(repeating: "b", count: 64)
        let theirs = String(repeating: "c", count: 64)
        func version(_ id: String, _ millis: Int64, _ attachments: [String], node: UInt64 = 5) -> RecordVersion {
            RecordVersion(entity: "doc", id: id, hlc: Stamp(millis: millis, counter: 0, node: NodeID(node)), deleted: false,
                          payload: "{}", attachments: attachments)
        }
        do {
            let store = try makeStore(dir)
            try store.createSpace(name: "team")
            try store.putAttachment(Array("hello".utf8), expectedSHA256: sha256OfHello)
            _ = try store.applyRemote([version("A", 1, [shared, mine]), version("B", 1, [mine, sha256OfHello])], origin: .remote(transport: "t"))
            _ = try store.applyRemote(space: "team", [version("T", 1, [shared, theirs])], origin: .remote(transport: "t"))
            // A newer version of B without `mine`; the old one is kept as a loser and still counts.
            _ = try store.applyRemote([version("B", 2, [sha256OfHello], node: 6)], origin: .remote(transport: "t"))
        }
        do {
            let db = try Database(path: dir.path + "/ferry.db")
            try StoreTests.downgradeToVersion4(db)
        }
        let store = try makeStore(dir)
        let db = try Database(path: dir.path + "/ferry.db")
        #expect(try db.scalarInt("PRAGMA user_version") == Int64(Schema.latestVersion))
        let statement = try db.prepare("SELECT s.name, r.sha256, r.refs FROM attachment_refs r JOIN spaces s ON s.sid = r.sid ORDER BY 1, 2")
        var counts: [String] = []
        while try statement.step() { counts.append("\(statement.text(0)!) \(statement.text(1)!.prefix(1)) \(statement.int64(2))") }
        #expect(counts == ["private 2 2", "private a 1", "private b 2", "team a 1", "team c 1"])
        #expect(try store.missingAttachments() == [shared, mine])
        #expect(try store.missingAttachments(space: "team") == [shared, theirs])
    }
}

/// `bytes` in a new file under `dir`; its path.
private func writeTemp(_ bytes: [UInt8], in dir: TempDir) throws -> String {
    let path = dir.path + "/in-\(UUID().uuidString)"
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return path
}
