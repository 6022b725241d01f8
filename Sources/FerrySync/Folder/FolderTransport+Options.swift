import Glibc

extension FolderTransport {
    /// How a folder transport waits and when it compacts; the clock is a seam for tests.
    public struct Options: Sendable {
        /// How long a waiting pull sleeps between looks when no inotify event comes (and the
        /// only way it notices changes when inotify is unavailable, e.g. on some network mounts).
        public var pollInterval: Duration
        /// Compact when this device has more segments than this (so readers list few files).
        public var maxSegments: Int
        /// Compact when the envelopes newer ones of the same stream superseded take this many
        /// bytes per byte of the envelopes still current: the folder then stays within
        /// `1 + garbageRatio` times this device's live data, and each compaction, which
        /// rewrites the live data once, follows at least `garbageRatio` times as many new bytes
        /// (so its cost per pushed byte stays constant, however large the folder grows)...
        public var garbageRatio: Double
        /// ...and at least this many bytes (so a small folder is not compacted on every push).
        public var minimumCompactionBytes: Int
        /// The wall clock in milliseconds since the epoch: stamps status figures and temporary
        /// file names.
        public var wallClock: @Sendable () -> Int64
        /// How long a listing of the own directory that found nothing lost or cut short is
        /// trusted while the watcher reports no deletion there: a bound on how late a file the
        /// sync tool replaced with a shortened copy (which inotify does not tell from this
        /// device's own writes) or a missed event is found.
        public var ownFilesRecheck: Duration = .seconds(10)

        public init(pollInterval: Duration = .seconds(5), maxSegments: Int = 1024, garbageRatio: Double = 0.5,
                    minimumCompactionBytes: Int = 1 << 20,
                    wallClock: @escaping @Sendable () -> Int64 = Options.systemMillis) {
            self.pollInterval = pollInterval
            self.maxSegments = maxSegments
            self.garbageRatio = garbageRatio
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
