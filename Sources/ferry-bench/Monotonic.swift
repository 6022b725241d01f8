import Glibc

/// The monotonic clock, in nanoseconds: what every timing in the benchmark reads.
enum Monotonic {
    static func nanos() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// Runs `body` and adds the time it took to `total`.
    static func time<T, E: Error>(into total: inout UInt64, _ body: () throws(E) -> T) throws(E) -> T {
        let start = nanos()
        defer { total &+= nanos() &- start }
        return try body()
    }
}
