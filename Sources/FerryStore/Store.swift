import FerryModel
import FerrySQLite
import Foundation
import Synchronization

/// Ferry's record store: records in spaces, the change log, the durable outbox, transports and
/// their progress, losing versions and attachments, in one SQLite database (WAL) plus attachment
/// files, under one directory.
///
/// Promises:
/// - A call that returned has committed: with `durability = .full` it survives a crash and a power
///   loss, with `.normal` a crash of the process.
/// - A local write is one transaction: the record, its outbox entry and its change-log row.
/// - Remote versions, imports and local writes go through the same merge rules (`Merge`).
/// - Bad input throws a `FerryError` and writes nothing.
///
/// Thread-safe: writes from any thread are group-committed by a `WriteQueue`; reads use a
/// separate connection and never wait for a write to commit.
public final class Store: @unchecked Sendable {
    // @unchecked: `queue` serialises every use of the write connection, `reader` guards its own.

    /// The name of the space every store starts with.
    public static let privateSpace = "private"

    public let configuration: StoreConfiguration
    /// This device's node id, the last field of every stamp it issues.
    public let nodeID: NodeID
    /// The node id the store had until this open found it on another machine than the one it
    /// was made or last opened on (its state directory was copied or restored there), if so.
    /// The copy then takes a new node id, so that two devices never write and skip changes as
    /// one (they would share one folder directory and ignore each other's relay events).
    public let replacedNodeID: NodeID?
    /// Why the sweep of unreferenced attachments this open does failed, if it did (a full
    /// disk): housekeeping only, so the store opens anyway, and the next open sweeps again.
    public var sweepFailure: FerryError? { sweepOutcome.withLock { $0 } }
    private let sweepOutcome = Mutex<FerryError?>(nil)
    let catalog: Catalog
    let queue: WriteQueue
    /// Point lookups, pages and the change log: quick reads.
    let reader: Reader
    /// Scans (counts, digests, outbox listings), so that they never hold up a quick read.
    let slowReader: Reader
    private let writer: Writer
    private let checkpointer: Checkpointer

    deinit {
        checkpointer.stop()
    }

    /// Copies the write-ahead log into the database file and empties the log, for the end of
    /// the process (ferryd as it stops): its connections are never closed at exit, so SQLite's
    /// own last checkpoint never ran, and the database file alone (a backup of a stopped
    /// ferryd's directory, copied without its `-wal`) lacked every write since the last
    /// checkpoint. Call it once nothing reads or writes any more; the store stays usable (a
    /// write after it logs again, and the next open reads that log as usual). Returns whether
    /// the log was emptied.
    @discardableResult
    public func close() -> Bool {
        checkpointer.stop(truncating: true)
    }

    /// Opens the store in `configuration.directory`, creating or migrating it as needed. While
    /// it is open, no other process can open its database (`Database`'s `processExclusive`): a
    /// second one waits up to five seconds and fails with "database is locked".
    /// - Throws: `FerryError.storage` when the directory or database cannot be opened (or
    ///   another process has it open), is not a Ferry store, or comes from a newer Ferry.
    public init(configuration: StoreConfiguration) throws(FerryError) {
        self.configuration = configuration
        let dir = configuration.directory
        for path in [dir, configuration.attachmentsPath, configuration.attachmentsPath + "/tmp"] {
            if mkdir(path, 0o700) != 0 && errno != EEXIST {
                throw AttachmentFiles.ioError("creating the state directory \(path)")
            }
        }
        let catalog = Catalog()
        self.catalog = catalog
        do {
            let db = try Database(path: configuration.databasePath, coalesceLogWrites: true, processExclusive: true)
            try Store.configure(db, configuration)
            try Store.migrate(db, path: configuration.databasePath)
            let (node, replaced, clockState) = try Store.engineState(db, configuration)
            try Store.ensurePrivateSpace(db, now: configuration.wallClock())
            catalog.load(try Store.loadSpaces(db))
            let lastSeq = try db.scalarInt("SELECT max(seq) FROM changes") ?? 0
            let clock = HybridClock(node: node, last: clockState, maxDriftMillis: configuration.maxDriftMillis,
                                    wallClock: configuration.wallClock)
            nodeID = node
            replacedNodeID = replaced
            // Checkpoints run on their own thread, off the commit path.
            checkpointer = try Checkpointer(path: configuration.databasePath, processExclusive: true) { try Store.configure($0, configuration) }
            writer = Writer(db: db, config: configuration, catalog: catalog, clock: clock, lastSeq: lastSeq,
                            logWatch: try LogWatch(db: db, checkpointer: checkpointer))
            queue = WriteQueue(writer: writer)
            let readDB = try Database(path: configuration.databasePath, processExclusive: true)
            try Store.configure(readDB, configuration)
            try readDB.execute("PRAGMA query_only = ON")
            reader = Reader(db: readDB, catalog: catalog)
            let slowDB = try Database(path: configuration.databasePath, processExclusive: true)
            try Store.configure(slowDB, configuration)
            try slowDB.execute("PRAGMA query_only = ON")
            slowReader = Reader(db: slowDB, catalog: catalog)
        } catch let error as FerryError {
            throw error
        } catch {
            throw .storage(context: "opening the store in \(dir)", message: "\(error)")
        }
        // Housekeeping: on a full disk the store still opens, so reads go on and space can be
        // freed; what it would have removed is removed by a later open.
        do {
            try sweepAttachments(orphanFiles: true)
        } catch {
            sweepOutcome.withLock { $0 = error }
        }
    }

    /// Told of every commit that added changes, with those changes (on the committing thread:
    /// return quickly).
    public func setCommitObserver(_ observer: @escaping @Sendable (CommittedChanges) -> Void) {
        _ = try? write("setting the commit observer") { writer in writer.onCommit = observer }
    }

    /// The greatest committed change-log sequence number.
    public var lastSeq: Int64 {
        (try? reader.read { db in try db.scalarInt("SELECT max(seq) FROM changes") ?? 0 }) ?? 0
    }

    // MARK: Opening

    static func configure(_ db: Database, _ config: StoreConfiguration) throws {
        try db.execute("PRAGMA journal_mode = WAL")
        try db.execute("PRAGMA synchronous = \(config.durability == .full ? "FULL" : "NORMAL")")
        try db.execute("PRAGMA cache_size = -\(config.cacheKiB)")
        try db.execute("PRAGMA temp_store = MEMORY")
        try db.execute("PRAGMA foreign_keys = OFF")
    }

    static func migrate(_ db: Database, path: String) throws {
        let appID = Int32(truncatingIfNeeded: try db.scalarInt("PRAGMA application_id") ?? 0)
        let version = Int(try db.scalarInt("PRAGMA user_version") ?? 0)
        if appID != 0 && appID != Schema.applicationID {
            throw FerryError.storage(context: "opening \(path)",
                                     message: "this file is not a Ferry store (application_id \(appID)); point --state-dir at a directory of its own")
        }
        if appID == 0 && version == 0 {
            let tables = try db.scalarInt("SELECT count(*) FROM sqlite_master") ?? 0
            if tables > 0 {
                throw FerryError.storage(context: "opening \(path)",
                                         message: "this SQLite file has tables but is not a Ferry store; point --state-dir at a directory of its own")
            }
        }
        if version > Schema.latestVersion {
            throw FerryError.storage(context: "opening \(path)",
                                     message: "the store has schema version \(version), newer than this Ferry knows (\(Schema.latestVersion)); upgrade Ferry")
        }
        for next in version..<Schema.latestVersion {
            try db.transaction {
                try db.execute(Schema.migrations[next])
                try db.execute("PRAGMA application_id = \(Schema.applicationID)")
                try db.execute("PRAGMA user_version = \(next + 1)")
            }
        }
    }

    static func engineState(_ db: Database, _ config: StoreConfiguration) throws -> (NodeID, replaced: NodeID?, Stamp?) {
        let get = try db.prepare("SELECT value FROM engine_state WHERE key = ?")
        func value(_ key: String) throws -> String? {
            defer { get.reset() }
            get.bind(1, key)
            return try get.step() ? get.text(0) : nil
        }
        let put = try db.prepare("INSERT OR REPLACE INTO engine_state (key, value) VALUES (?, ?)")
        func set(_ key: String, _ text: String) throws {
            defer { put.reset() }
            put.bind(1, key); put.bind(2, text)
            try put.run()
        }
        var node = try value("node_id").flatMap { NodeID(hex: $0) }
        var replaced: NodeID?
        let machine = config.machineID()
        if let machine {
            let known = try value("machine_id")
            if let known, known != machine, let old = node {
                // The state directory was copied to (or restored on) another machine.
                replaced = old
                node = nil
            }
            if known != machine { try set("machine_id", machine) }
        }
        if node == nil {
            let fresh = NodeID(config.random64())
            try set("node_id", fresh.description)
            node = fresh
        }
        get.bind(1, "clock")
        var clock: Stamp?
        if try get.step(), let text = get.text(0) { clock = Stamp.parse(text) }
        get.reset()
        // The saved value is the clock's ceiling (see `Writer.clockCeiling`), written in the
        // transaction whose stamps reached the previous one, so it is never behind a stamp this
        // store holds or issued.
        return (node!, replaced, clock)
    }

    static func ensurePrivateSpace(_ db: Database, now: Int64) throws {
        let statement = try db.prepare(
            "INSERT OR IGNORE INTO spaces (name, kind, owner_id, created_at) VALUES (?, 'private', NULL, ?)")
        statement.bind(1, privateSpace)
        statement.bind(2, now)
        try statement.run()
    }

    static func loadSpaces(_ db: Database) throws -> [Catalog.Space] {
        var spaces: [Int64: Catalog.Space] = [:]
        let statement = try db.prepare("SELECT sid, name, kind, owner_id, created_at FROM spaces")
        while try statement.step() {
            let info = SpaceInfo(name: statement.text(1) ?? "", kind: SpaceInfo.Kind(rawValue: statement.text(2) ?? "") ?? .shared,
                                 ownerID: statement.text(3), createdAt: statement.int64(4))
            spaces[statement.int64(0)] = Catalog.Space(sid: statement.int64(0), info: info, transports: [])
        }
        let transports = try db.prepare("SELECT sid, name, kind, config FROM transports ORDER BY sid, name")
        while try transports.step() {
            let sid = transports.int64(0)
            guard let name = spaces[sid]?.info.name else { continue }
            spaces[sid]?.transports.append(TransportInfo(space: name, name: transports.text(1) ?? "",
                                                         kind: transports.text(2) ?? "", config: transports.text(3) ?? "{}"))
        }
        return Array(spaces.values)
    }

    // MARK: The write path

    /// Runs `body` on the writer inside a (group-committed) transaction and returns its result.
    func write<T>(_ context: String, _ body: @escaping (Writer) throws -> T) throws(FerryError) -> T {
        var result: T?
        do {
            try queue.submit { writer in result = try body(writer) }
        } catch let error as FerryError {
            throw error
        } catch {
            throw .storage(context: context, message: "\(error)")
        }
        return result!
    }

    func checkBatch(_ count: Int) throws(FerryError) {
        if count > configuration.maxBatch { throw .batchTooLarge(count: count, limit: configuration.maxBatch) }
    }
}
