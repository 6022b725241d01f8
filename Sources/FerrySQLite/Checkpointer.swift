import Foundation

/// Copies the write-ahead log back into the database on a thread of its own, so that no
/// commit pays for a checkpoint (and its fsync) on the way to answering its caller.
///
/// The write connection runs with `wal_autocheckpoint` off (the store's and the relay's); this
/// thread runs a PASSIVE checkpoint (which never blocks writers or readers) whenever the writer
/// signals that pages were committed, and then once a second until a checkpoint finds nothing
/// left to copy; an idle database costs it no wake-ups. The thread runs at nice 10, below the
/// threads that answer clients (measured: fewer late Watch deliveries). Owns its connection;
/// `@unchecked Sendable` because `db` is used only by that thread, and `stopping` and the
/// semaphores are thread-safe.
public final class Checkpointer: @unchecked Sendable {
    private let db: Database
    private let wake = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var stopping = false
    private let finished = DispatchSemaphore(value: 0)

    /// Opens its own connection to the database at `path` (`configure` sets it up, e.g. a busy
    /// timeout) and starts the thread.
    public init(path: String, configure: (Database) throws -> Void) throws {
        db = try Database(path: path)
        try configure(db)
        let thread = Thread { [self] in run() }
        thread.name = "ferry-checkpoint"
        thread.start()
    }

    /// Asks for a checkpoint soon (called by the writer after commits).
    public func nudge() { wake.signal() }

    /// Stops the thread after a last checkpoint.
    public func stop() {
        lock.lock()
        stopping = true
        lock.unlock()
        wake.signal()
        finished.wait()
    }

    private func run() {
        // Copying pages back is background work: below the threads that answer clients.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)   // 0: this thread (Linux keeps nice per thread)
        var behind = false
        while true {
            if behind {
                _ = wake.wait(timeout: .now() + 1)
            } else {
                wake.wait()
            }
            lock.lock()
            let done = stopping
            lock.unlock()
            behind = !checkpoint()
            if done { break }
        }
        finished.signal()
    }

    /// Runs a PASSIVE checkpoint; true when it copied the whole log, false when readers or a
    /// writer kept frames from it or it failed (it is then tried again a second later).
    private func checkpoint() -> Bool {
        guard let statement = try? db.prepare("PRAGMA wal_checkpoint(PASSIVE)"), (try? statement.step()) == true else {
            return false
        }
        // (busy, frames in the log, frames checkpointed)
        let logged = statement.int64(1), copied = statement.int64(2)
        return logged <= 0 || copied >= logged
    }
}
