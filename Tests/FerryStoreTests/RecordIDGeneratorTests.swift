import Foundation
import Synchronization
import Testing
@testable import FerryStore

/// Ids made for records written without one: UUID v7, unique, in the order they were made.
@Suite struct RecordIDGeneratorTests {
    @Test func idsAreVersion7UUIDsInUpperCase() throws {
        let id = RecordIDGenerator().next()
        #expect(id.count == 36)
        let parsed = try #require(UUID(uuidString: id))
        #expect(parsed.uuidString == id)   // Foundation prints upper case too
        let bytes = withUnsafeBytes(of: parsed.uuid) { Array($0) }
        #expect(bytes[6] >> 4 == 7)          // version
        #expect(bytes[8] >> 6 == 0b10)       // variant
        #expect(id.uppercased() == id)
    }

    @Test func theFirst48BitsAreTheMillisecondsOfTheClock() throws {
        let millis: Int64 = 1_764_460_800_123   // 2025-11-30T00:00:00.123Z
        let id = RecordIDGenerator(clock: { millis }).next()
        let hex = id.replacingOccurrences(of: "-", with: "").prefix(12)
        #expect(Int64(hex, radix: 16) == millis)
    }

    /// Many ids within one millisecond, then across a clock that stands still long enough for
    /// the 12-bit counter to run out: all distinct, each greater than the one before.
    @Test func idsFromOneGeneratorIncreaseEvenWithinOneMillisecond() {
        let now = Mutex<Int64>(1_700_000_000_000)
        let generator = RecordIDGenerator(clock: { now.withLock { $0 } })
        var previous = ""
        var seen = Set<String>()
        for i in 0..<20_000 {
            if i % 7000 == 6999 { now.withLock { $0 += 1 } }
            let id = generator.next()
            #expect(id > previous, "id \(i): \(id) after \(previous)")
            #expect(seen.insert(id).inserted)
            previous = id
        }
    }

    /// A clock that goes back (NTP) does not make ids go back.
    @Test func aClockThatGoesBackDoesNotReorderIds() {
        let now = Mutex<Int64>(1_700_000_000_500)
        let generator = RecordIDGenerator(clock: { now.withLock { $0 } })
        let before = generator.next()
        now.withLock { $0 -= 400 }
        let after = generator.next()
        #expect(after > before)
    }

    @Test func threadsGetDistinctIds() async {
        let generator = RecordIDGenerator()
        let ids = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<8 { group.addTask { (0..<2000).map { _ in generator.next() } } }
            var all: [String] = []
            for await part in group { all += part }
            return all
        }
        #expect(Set(ids).count == ids.count)
    }
}
