import FerryCrypto
import Foundation
import Synchronization

/// Makes the ids of records written without one: UUIDs of version 7 (RFC 9562) in upper case,
/// such as `01936F2A-3C4D-7E5F-A1B2-C3D4E5F60718`.
///
/// The first 48 bits are the Unix time in milliseconds and the next 12 a counter that starts
/// at a random value each millisecond, so ids made here sort in the order they were made (a
/// counter that runs out moves on to the next millisecond) and new records land at the end of
/// the store's key index instead of on a random page of it. The remaining 62 bits are random,
/// taken from a pool filled from the kernel 4 KiB at a time (one system call per 256 ids).
///
/// Thread-safe; one generator serves a process.
public final class RecordIDGenerator: Sendable {
    private struct State {
        var lastMillis: Int64 = -1
        var counter: UInt16 = 0
        var pool = [UInt8](repeating: 0, count: 4096)
        var used = 4096
    }

    private let state = Mutex(State())
    private let clock: @Sendable () -> Int64

    /// The generator every store uses unless its configuration says otherwise.
    public static let shared = RecordIDGenerator()

    /// - Parameter clock: milliseconds since the epoch.
    public init(clock: @escaping @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }) {
        self.clock = clock
    }

    /// A fresh id, greater (bytewise) than every id this generator made before.
    public func next() -> String {
        let now = clock()
        var bytes = state.withLock { s -> (UInt64, UInt64) in
            let random = Self.take(10, from: &s)
            if now > s.lastMillis {
                s.lastMillis = now
                // Start low in the 12-bit range so that a burst within one millisecond has room.
                s.counter = UInt16(random.0 & 0x1FF)
            } else if s.counter < 0xFFF {
                s.counter += 1
            } else {
                // 4096 ids in one millisecond: borrow the next one (the clock catches up).
                s.lastMillis += 1
                s.counter = UInt16(random.0 & 0x1FF)
            }
            let high = UInt64(truncatingIfNeeded: s.lastMillis) << 16 | 0x7000 | UInt64(s.counter)
            let low = (random.1 & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
            return (high, low)
        }
        return Self.format(&bytes)
    }

    /// `count` (3 to 10) random bytes from the pool as two integers: the first two bytes, then
    /// the rest.
    private static func take(_ count: Int, from s: inout State) -> (UInt64, UInt64) {
        if s.used + count > s.pool.count {
            SecureRandom.fill(&s.pool)
            s.used = 0
        }
        var first: UInt64 = UInt64(s.pool[s.used])
        first |= UInt64(s.pool[s.used + 1]) << 8
        var second: UInt64 = 0
        for i in 2..<count { second = second << 8 | UInt64(s.pool[s.used + i]) }
        s.used += count
        return (first, second)
    }

    private static func format(_ value: inout (UInt64, UInt64)) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        return String(unsafeUninitializedCapacity: 36) { out in
            var i = 0
            func put(_ word: UInt64, nibbles: Int, from top: Int) {
                for k in 0..<nibbles {
                    out[i] = digits[Int(word >> UInt64(4 * (top - k)) & 0xF)]
                    i += 1
                }
            }
            let (high, low) = value
            put(high, nibbles: 8, from: 15)
            out[i] = UInt8(ascii: "-"); i += 1
            put(high, nibbles: 4, from: 7)
            out[i] = UInt8(ascii: "-"); i += 1
            put(high, nibbles: 4, from: 3)
            out[i] = UInt8(ascii: "-"); i += 1
            put(low, nibbles: 4, from: 15)
            out[i] = UInt8(ascii: "-"); i += 1
            put(low, nibbles: 12, from: 11)
            return i
        }
    }
}
