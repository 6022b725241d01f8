import Synchronization

/// Decides which of a repeated event's occurrences are logged: the first of each key, then at
/// most one per `interval` per key, each saying how many went unlogged since the line before.
/// A device that keeps retrying with a revoked token, or an owner pushing against its quota,
/// shows up in the log without flooding it.
///
/// Thread-safe. Holds at most `maxKeys` keys (forgetting them all beyond it, which at worst
/// logs a repeat early), so a flood of distinct keys cannot grow it. The clock is a seam, in
/// milliseconds.
public final class LogThrottle: Sendable {
    private struct Entry {
        var loggedAt: Int64
        var unlogged: Int
    }
    private let entries = Mutex<[String: Entry]>([:])
    private let intervalMillis: Int64
    private let maxKeys: Int
    private let now: @Sendable () -> Int64

    public init(intervalMillis: Int64 = 60_000, maxKeys: Int = 10_000, now: @escaping @Sendable () -> Int64) {
        self.intervalMillis = intervalMillis
        self.maxKeys = maxKeys
        self.now = now
    }

    /// Counts one occurrence of `key`.
    /// - Returns: nil when it is not to be logged; otherwise how many occurrences of `key` since
    ///   the last logged one were not logged (0 for the first).
    public func admit(_ key: String) -> Int? {
        let t = now()
        return entries.withLock { entries -> Int? in
            if var entry = entries[key] {
                guard t - entry.loggedAt >= intervalMillis else {
                    entry.unlogged += 1
                    entries[key] = entry
                    return nil
                }
                entries[key] = Entry(loggedAt: t, unlogged: 0)
                return entry.unlogged
            }
            if entries.count >= maxKeys { entries.removeAll(keepingCapacity: true) }
            entries[key] = Entry(loggedAt: t, unlogged: 0)
            return 0
        }
    }
}
