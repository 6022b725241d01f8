import Foundation

/// Copies the write-ahead log back into the database on a thread of its own, so that no
/// commit pays for a checkpoint (and its fsync) on the way to answering its caller.
///
/// The write connection runs with `wal_autocheckpoint` off (the store's and the relay's); this thread runs a PASSIVE
/// checkpoint (which never blocks writers or readers) whenever the writer signals that a few
/// hundred pages were committed, and at least every second while there is work. Owns its
/// connection; `@unchecked Sendable` because `db` is used only by that thread, and `stopped`
/// and the semaphore are thread-safe.
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
        while true {
            _ = wake.wait(timeout: .now() + 1)
            lock.lock()
            let done = stopping
            lock.unlock()
            _ = try? db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            if done { break }
        }
        finished.signal()
    }
}
