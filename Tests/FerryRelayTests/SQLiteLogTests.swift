import FerryRelay
import FerrySync
import FerryTestSupport
import Foundation
import Testing

/// The SQLite relay's write-ahead log stays bounded while pushes keep coming: the background
/// checkpointer never finds a busy log idle enough to start it over, so the writer does.
@Suite struct SQLiteLogTests {
    @Test func theLogStaysBoundedUnderASteadyStreamOfPushes() throws {
        let dir = TempDir("relay-log")
        let path = dir.path + "/relay.db"
        let limit = 2 << 20
        let storage = try SQLiteRelayStorage(path: path, synchronous: "NORMAL", maxLogBytes: limit)
        let owner = TestEnvelopes.owner()
        try storage.createOwner(owner, quotaBytes: nil, now: 1)
        func size(_ path: String) -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
        }
        // About 24 MiB of events in 2,000 commits, back to back: twelve times the limit.
        var largest = 0
        var millis: Int64 = 1000
        for _ in 0..<2000 {
            let batch = (0..<6).map { _ in
                millis += 1
                return TestEnvelopes.incoming(TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: millis, bodySize: 2000))
            }
            #expect(try storage.push(owner, events: batch, quotaBytes: 1 << 40, now: 2) == Array(repeating: .stored, count: 6))
            largest = max(largest, size(path + "-wal"))
        }
        // One commit past the limit, at most: the log is started over after the commit that
        // took it past, and trimmed to the limit.
        #expect(largest < 2 * limit, "the log grew to \(largest) bytes with a limit of \(limit)")
        #expect(size(path) > 12 << 20, "the events reached the database file (\(size(path)) bytes)")
        let page = try storage.pull(owner, after: .start, limit: 10, maxBytes: 1 << 20)
        #expect(page.events.count == 10 && page.more)
    }
}
