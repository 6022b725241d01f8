/// Keeps the write-ahead log of a write connection bounded, with a `Checkpointer` doing the
/// copying off the commit path.
///
/// Told the log's size after every commit (SQLite's WAL hook: no system call), it nudges the
/// checkpointer every `pagesPerNudge` pages logged. Under a steady stream of commits a
/// background checkpoint never finds the log idle enough to start it over, so the log would
/// grow for as long as the stream lasts (measured: a relay taking pushes for a minute had a
/// 1 GB log, and every page it wrote was a fresh one the kernel had to zero); once it holds
/// more than `maxBytes`, `afterCommit()` starts it over from the writer
/// (`wal_checkpoint(RESTART)`), and the connection's `journal_size_limit`, which `init` sets to
/// `maxBytes`, trims the file.
///
/// Used on the thread that writes through the connection, like the connection itself.
public final class LogWatch {
    private let db: Database
    private let checkpointer: Checkpointer?
    private let pagesPerNudge: Int
    private let maxPages: Int
    /// Pages in the log after the last commit, and when the checkpointer was last nudged.
    public private(set) var pages = 0
    private var pagesAtNudge = 0

    /// Nudging every this many pages (32 MiB of 4 KiB pages) copies a page written again and
    /// again back once, not each time (nudging every 1,000 pages, SQLite's default, cost the
    /// store's bulk writes a third of their speed).
    public static let defaultPagesPerNudge = 8192
    /// The log is started over past this many bytes.
    public static let defaultMaxBytes = 64 << 20

    /// Installs the WAL hook on `db` (replacing SQLite's automatic checkpoints, which this
    /// turns off) and limits the log file to `maxBytes` after a checkpoint.
    public init(db: Database, checkpointer: Checkpointer?, pagesPerNudge: Int = LogWatch.defaultPagesPerNudge,
                maxBytes: Int = LogWatch.defaultMaxBytes) throws(SQLiteError) {
        self.db = db
        self.checkpointer = checkpointer
        self.pagesPerNudge = max(1, pagesPerNudge)
        try db.execute("PRAGMA wal_autocheckpoint = 0")
        try db.execute("PRAGMA journal_size_limit = \(maxBytes)")
        let pageSize = Int((try? db.scalarInt("PRAGMA page_size")) ?? 4096)
        maxPages = maxBytes / max(pageSize, 512)
        db.onWALCommit { [unowned self] pages in
            // The log starts over after a checkpoint: a count smaller than the last is a new log.
            if pages < self.pages { pagesAtNudge = 0 }
            self.pages = pages
            if pages - pagesAtNudge >= self.pagesPerNudge {
                pagesAtNudge = pages
                self.checkpointer?.nudge()
            }
        }
    }

    deinit { db.onWALCommit(nil) }

    /// Call after each commit, outside any transaction: starts the log over when it has grown
    /// past the limit (waiting, up to the connection's busy timeout, for readers of the old one).
    /// A checkpoint that cannot finish now is tried again after a later commit.
    public func afterCommit() {
        guard pages > maxPages else { return }
        _ = try? db.execute("PRAGMA wal_checkpoint(RESTART)")
    }
}
