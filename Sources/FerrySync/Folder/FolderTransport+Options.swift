import Glibc

extension FolderTransport {
    /// How a folder transport waits and when it compacts; the clock is a seam for tests.
    public struct Options: Sendable {
        /// How long a waiting pull sleeps between looks when no inotify event comes (and the
        /// only way it notices changes when inotify is unavailable, e.g. on some network mounts).
        public var pollInterval: Duration
        /// Compact when this device has more segments than this.
        public var maxSegments: Int
        /// Compact when this device's files (segments and snapshot) are larger than this many
        /// times its last snapshot...
        public var growthFactor: Double
        /// ...and at least this many bytes (so a small folder is not compacted on every push).
        public var minimumCompactionBytes: Int
        /// The wall clock in milliseconds since the epoch: stamps status figures and temporary
        /// file names.
        public var wallClock: @Sendable () -> Int64

        public init(pollInterval: Duration = .seconds(5), maxSegments: Int = 64, growthFactor: Double = 2,
                    minimumCompactionBytes: Int = 1 << 20,
                    wallClock: @escaping @Sendable () -> Int64 = Options.systemMillis) {
            self.pollInterval = pollInterval
            self.maxSegments = maxSegments
            self.growthFactor = growthFactor
            self.minimumCompactionBytes = minimumCompactionBytes
            self.wallClock = wallClock
        }

        /// The system's real-time clock.
        @Sendable public static func systemMillis() -> Int64 {
            var ts = timespec()
            clock_gettime(CLOCK_REALTIME, &ts)
            return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
        }
    }
}
