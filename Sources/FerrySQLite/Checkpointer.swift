import Foundation
import Synchronization

/// Copies the write-ahead log back into the database on a thread of its own, so that no
/// commit pays for a checkpoint (and its fsync) on the way to answering its caller.
///
/// The write connection runs with `wal_autocheckpoint` off (the store's and the relay's); this
/// thread runs a PASSIVE checkpoint (which never blocks writers or readers) whenever the writer
/// signals that pages were committed, and then once a second until a checkpoint finds nothing
/// left to copy. It also runs one `settleAfter` after the first commit since its last pass
/// (`noteCommit`), so that the database file is never far behind the log however slowly pages
/// come: a copy of the file alone (a backup taken without the log) then misses at most that
/// long of writes, not everything since the last large burst or clean stop. An idle database
/// costs it no wake-ups. The thread runs at nice 10, below the threads that answer clients
/// (measured: fewer late Watch deliveries). Owns its connection; `@unchecked Sendable` because
/// `db` is used only by that thread, `stopping`, a nudge not yet acted on and the last pass's
/// figures are guarded by `lock`, `armed` is atomic, and the semaphores and `passLock` (which
/// keeps a pass and the writer's own checkpoint apart) are thread-safe.
public final class Checkpointer: @unchecked Sendable {
    private let db: Database
    private let wake = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var stopping = false
    /// Whether the last checkpoint empties the log, and whether it did (under `lock`).
    private var truncateLast = false
    private var lastTruncated = false
    private var progress = Pass(logged: 0, copied: 0)
    /// Held for each pass, and by `withPassesHeld`.
    private let passLock = NSLock()
    private let finished = DispatchSemaphore(value: 0)
    /// A nudge not yet acted on (under `lock`).
    private var nudged = false
    /// Set by the first commit after a pass (`noteCommit`), cleared when a pass starts.
    private let armed = Atomic<Bool>(false)
    /// How long after such a commit a pass runs.
    public let settleAfter: Duration
    /// The default `settleAfter`.
    public static let defaultSettleAfter: Duration = .seconds(30)

    /// What a checkpoint found: the frames in the log and how many of them are in the database.
    public struct Pass: Sendable, Equatable {
        public var logged: Int
        public var copied: Int
        public init(logged: Int, copied: Int) { self.logged = logged; self.copied = copied }
    }

    /// The last checkpoint's finding (zeros before the first). It may be of a log that has
    /// been started over since: `logged` is then more than the log now holds, or (a log that
    /// grew past it again) a reason to start the log over that is only a guess, never a wrong
    /// one, since starting over is always safe.
    public var lastPass: Pass {
        lock.lock(); defer { lock.unlock() }
        return progress
    }

    /// Opens its own connection to the database at `path` (`configure` sets it up, e.g. a busy
    /// timeout; `processExclusive` as the process's other connections to it are) and starts the
    /// thread.
    public init(path: String, processExclusive: Bool = false, settleAfter: Duration = Checkpointer.defaultSettleAfter,
                configure: (Database) throws -> Void) throws {
        self.settleAfter = settleAfter
        db = try Database(path: path, processExclusive: processExclusive)
        try configure(db)
        let thread = Thread { [self] in run() }
        thread.name = "ferry-checkpoint"
        thread.start()
    }

    /// Asks for a checkpoint soon (called by the writer after commits).
    public func nudge() {
        lock.lock()
        nudged = true
        lock.unlock()
        wake.signal()
    }

    /// Says pages were committed (called by the writer after each commit: one atomic exchange,
    /// and a wake-up of this thread only for the first commit since its last pass), so that a
    /// pass runs `settleAfter` later.
    public func noteCommit() {
        if !armed.exchange(true, ordering: .acquiringAndReleasing) { wake.signal() }
    }

    /// Runs `body` (the writer's own checkpoint: `LogWatch`) with no pass under way and none
    /// starting until it returns: a checkpoint meeting one of this thread's is refused at once
    /// (SQLITE_BUSY). When a pass is under way, `wait` waits for it to end (a pass never waits
    /// for anything, so for one pass at most); otherwise this returns nil without running `body`.
    public func withPassesHeld<T>(wait: Bool, _ body: () throws -> T) rethrows -> T? {
        if wait { passLock.lock() } else if !passLock.try() { return nil }
        defer { passLock.unlock() }
        return try body()
    }

    /// Stops the thread after a last checkpoint; a later call returns at once. With `truncating`
    /// the last checkpoint copies the whole log (waiting for no reader: meant for when nothing
    /// reads or writes any more) and empties the file, so that the database file alone holds
    /// every committed write. Returns whether the last checkpoint did that.
    @discardableResult
    public func stop(truncating: Bool = false) -> Bool {
        lock.lock()
        let first = !stopping
        stopping = true
        truncateLast = truncating
        lock.unlock()
        if first {
            wake.signal()
            finished.wait()
        }
        lock.lock()
        defer { lock.unlock() }
        return lastTruncated
    }

    private func run() {
        // Copying pages back is background work: below the threads that answer clients.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)   // 0: this thread (Linux keeps nice per thread)
        var behind = false
        // When the settling pass is due, while commits since the last pass wait for it.
        var settleAt: ContinuousClock.Instant?
        while true {
            if behind {
                _ = wake.wait(timeout: .now() + 1)
            } else if let settleAt {
                let left = max(.zero, settleAt - .now).components
                _ = wake.wait(timeout: .now() + .seconds(Int(left.seconds)) + .nanoseconds(Int(left.attoseconds / 1_000_000_000)))
            } else {
                wake.wait()
            }
            lock.lock()
            let done = stopping, truncate = truncateLast, wasNudged = nudged
            nudged = false
            lock.unlock()
            if done && truncate {
                let truncated = truncateLog()
                lock.lock()
                lastTruncated = truncated
                lock.unlock()
                break
            }
            if settleAt == nil && armed.load(ordering: .acquiring) { settleAt = .now + settleAfter }
            let settling = settleAt.map { ContinuousClock.now >= $0 } ?? false
            guard wasNudged || behind || settling || done else { continue }
            // Cleared before the pass: a commit during it arms the next one.
            armed.store(false, ordering: .releasing)
            settleAt = nil
            behind = !checkpoint()
            if done { break }
        }
        finished.signal()
    }

    /// A TRUNCATE checkpoint: copies the whole log and empties the file; false when a reader or
    /// a writer kept it from that (SQLITE_BUSY) or it failed.
    private func truncateLog() -> Bool {
        passLock.lock(); defer { passLock.unlock() }
        guard let statement = try? db.prepare("PRAGMA wal_checkpoint(TRUNCATE)"), (try? statement.step()) == true else {
            return false
        }
        // (busy, frames in the log, frames checkpointed): an emptied log reports 0 and 0.
        return statement.int64(0) == 0 && statement.int64(1) == 0
    }

    /// Runs a PASSIVE checkpoint; true when it copied the whole log, false when readers or a
    /// writer kept frames from it or it failed (it is then tried again a second later).
    private func checkpoint() -> Bool {
        passLock.lock(); defer { passLock.unlock() }
        guard let statement = try? db.prepare("PRAGMA wal_checkpoint(PASSIVE)"), (try? statement.step()) == true else {
            return false
        }
        // (busy, frames in the log, frames checkpointed)
        let logged = statement.int64(1), copied = statement.int64(2)
        lock.lock()
        progress = Pass(logged: Int(max(0, logged)), copied: Int(max(0, copied)))
        lock.unlock()
        return logged <= 0 || copied >= logged
    }
}
