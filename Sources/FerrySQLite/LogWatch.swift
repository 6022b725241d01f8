/// Keeps the write-ahead log of a write connection bounded, with a `Checkpointer` doing the
/// copying off the commit path.
///
/// Told the log's size after every commit (SQLite's WAL hook: no system call), it nudges the
/// checkpointer every `pagesPerNudge` pages logged, and tells it of every commit
/// (`Checkpointer.noteCommit`, which copies the log back within `settleAfter` however few pages
/// come). Under a steady stream of commits a
/// background checkpoint never finds the log idle enough to start it over, so the log would
/// grow for as long as the stream lasts (measured: a relay taking pushes for a minute had a
/// 1 GB log, and every page it wrote was a fresh one the kernel had to zero); once it holds
/// more than `maxBytes`, `afterCommit()` starts it over from the writer
/// (`wal_checkpoint(RESTART)`).
///
/// The file keeps its size when the log starts over: the next commits overwrite pages the
/// kernel holds already. Trimming it to `maxBytes` at each restart (as this did before) freed
/// the pages past that, which the log then grew into again before the next restart, so every
/// commit there paid for fresh pages (measured: a single put in ferryd took about 4 µs of CPU
/// more, a tenth of it). The connection's `journal_size_limit` (`trimBytes`, twice `maxBytes`)
/// trims only a log that one large transaction took past what the restarts keep it under (one
/// and a half times `maxBytes`, and a commit); `Checkpointer.stop(truncating:)` empties it.
///
/// A restart copies back, on the writer's thread, whatever the checkpointer has not copied yet:
/// up to 32 MiB, which held every write (and, in ferryd, every call) for tens of milliseconds.
/// So past `maxBytes` the writer nudges the checkpointer and restarts the log only once it has
/// copied all but a tail of it (`restartTailPages`); past half as much again it restarts at once
/// whatever is left, since on a busy machine the checkpointer (at a lower priority) may not
/// keep up.
///
/// Used on the thread that writes through the connection, like the connection itself.
public final class LogWatch {
    private let db: Database
    private let checkpointer: Checkpointer?
    private let pagesPerNudge: Int
    private let maxPages: Int
    /// The tail left to copy that the writer copies itself (`restartTailPages`, at most a
    /// quarter of the limit, so a small limit keeps its restarts small too), and how often it
    /// nudges the checkpointer while it waits for that (both in pages).
    private let tailPages: Int
    private let nudgeSpacing: Int
    /// Pages in the log after the last commit, and when the checkpointer was last nudged.
    public private(set) var pages = 0
    private var pagesAtNudge = 0

    /// Nudging every this many pages (32 MiB of 4 KiB pages) copies a page written again and
    /// again back once, not each time (nudging every 1,000 pages, SQLite's default, cost the
    /// store's bulk writes a third of their speed).
    public static let defaultPagesPerNudge = 8192
    /// The log is started over past this many bytes.
    public static let defaultMaxBytes = 64 << 20
    /// Past `maxBytes`, the log is started over once no more than this many of its pages are
    /// left to copy (1 MiB of 4 KiB pages). The restart copies them and syncs them, and the
    /// sync is what costs: measured, 37-48 ms with a tail of 4 MiB, 0.1-4 ms with 1 MiB.
    public static let defaultRestartTailPages = 256

    /// The log file is trimmed to this when it is started over, only when it is larger.
    public let trimBytes: Int

    /// Installs the WAL hook on `db` (replacing SQLite's automatic checkpoints, which this
    /// turns off) and trims the log file past `trimBytes` when it starts over.
    public init(db: Database, checkpointer: Checkpointer?, pagesPerNudge: Int = LogWatch.defaultPagesPerNudge,
                maxBytes: Int = LogWatch.defaultMaxBytes, restartTailPages: Int = LogWatch.defaultRestartTailPages) throws(SQLiteError) {
        self.db = db
        self.checkpointer = checkpointer
        self.pagesPerNudge = max(1, pagesPerNudge)
        try db.execute("PRAGMA wal_autocheckpoint = 0")
        let pageSize = max(512, Int((try? db.scalarInt("PRAGMA page_size")) ?? 4096))
        maxPages = maxBytes / pageSize
        trimBytes = 2 * maxPages * pageSize
        try db.execute("PRAGMA journal_size_limit = \(trimBytes)")
        tailPages = max(0, min(restartTailPages, maxPages / 4))
        nudgeSpacing = max(1, min(tailPages, self.pagesPerNudge))
        db.onWALCommit { [unowned self] pages in
            // The log starts over after a checkpoint: a count smaller than the last is a new log.
            if pages < self.pages { pagesAtNudge = 0 }
            self.pages = pages
            self.checkpointer?.noteCommit()
            if pages - pagesAtNudge >= self.pagesPerNudge {
                pagesAtNudge = pages
                self.checkpointer?.nudge()
            }
        }
    }

    deinit { db.onWALCommit(nil) }

    /// Call after each commit, outside any transaction: starts the log over when it has grown
    /// past the limit and the checkpointer has copied all but the tail of it, or when it has
    /// grown past one and a half times the limit (waiting, up to the connection's busy timeout,
    /// for readers of the old one). A checkpoint that cannot finish now is tried again after a
    /// later commit.
    public func afterCommit() {
        guard pages > maxPages else { return }
        guard let checkpointer else { return restart() }
        let overdue = pages > maxPages + maxPages / 2
        if !overdue {
            let last = checkpointer.lastPass
            if last.logged > pages || pages - last.copied > tailPages {
                // Not copied far enough yet: ask for another pass (once per `nudgeSpacing`
                // pages, not at every commit).
                if pages - pagesAtNudge >= nudgeSpacing {
                    pagesAtNudge = pages
                    checkpointer.nudge()
                }
                return
            }
        }
        // Caught up, it restarts unless a pass is under way (then after a later commit); past
        // one and a half times the limit, it waits for that pass.
        _ = checkpointer.withPassesHeld(wait: overdue) { restart() }
    }

    private func restart() {
        _ = try? db.execute("PRAGMA wal_checkpoint(RESTART)")
    }
}
