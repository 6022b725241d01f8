import Foundation

/// Counts failed attempts per key (a remote address) in a sliding window and refuses further
/// attempts once `limit` failures fall within `window`. Guards pairing codes against guessing.
///
/// Thread-safe (`@unchecked Sendable`: every access to `failures` holds `lock`). The clock is a
/// seam, in milliseconds.
public final class FailureRateLimiter: @unchecked Sendable {
    private let lock = NSLock()
    private var failures: [String: [Int64]] = [:]
    private let limit: Int
    private let windowMillis: Int64
    private let now: @Sendable () -> Int64
    /// The most keys remembered; the oldest are forgotten beyond it (bounds memory under a flood).
    private let maxKeys = 10_000

    public init(limit: Int = 5, windowMillis: Int64 = 60_000, now: @escaping @Sendable () -> Int64) {
        self.limit = limit
        self.windowMillis = windowMillis
        self.now = now
    }

    /// Nil when `key` may try; otherwise the seconds until it may.
    public func retryAfter(_ key: String) -> Int? {
        lock.lock(); defer { lock.unlock() }
        let t = now()
        let recent = (failures[key] ?? []).filter { $0 > t - windowMillis }
        failures[key] = recent.isEmpty ? nil : recent
        guard recent.count >= limit, let oldest = recent.first else { return nil }
        return Int(max(1, (oldest + windowMillis - t + 999) / 1000))
    }

    /// Records one failure of `key`.
    public func recordFailure(_ key: String) {
        lock.lock(); defer { lock.unlock() }
        if failures.count >= maxKeys, failures[key] == nil { failures.removeAll() }
        failures[key, default: []].append(now())
    }
}
