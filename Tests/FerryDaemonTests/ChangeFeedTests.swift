import Foundation
import Testing
@testable import FerryDaemon
@testable import FerryStore

@Suite struct ChangeFeedTests {
    /// The shared feed keeps at most `maxBytes` of changes, not only `capacity` of them: 48
    /// records of 1 MiB are 48 MiB, so the oldest fall out and a watcher that far behind reads
    /// the store; the newest are still served from the feed.
    @Test func largeChangesAreKeptUpToTheByteBudget() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("feed-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var config = StoreConfiguration(directory: dir)
        config.durability = .normal
        let store = try Store(configuration: config)
        let hub = WatchHub(lastSeq: store.lastSeq)
        let feed = ChangeFeed(store: store, hub: hub)
        let big = #"{"text":""# + String(repeating: "z", count: 1 << 20 - 100) + #""}"#
        for i in 0..<48 { _ = try store.put(entity: "doc", id: "d\(i)", payload: big) }
        hub.committed(store.lastSeq)
        let recent = try #require(try feed.page(after: store.lastSeq - 5, limit: 500, spaces: nil, entities: nil))
        #expect(recent.items.map(\.seq) == Array((store.lastSeq - 4)...store.lastSeq))
        // The first changes fell out of the feed: nil sends that watcher to the store.
        #expect(try feed.page(after: 0, limit: 500, spaces: nil, entities: nil) == nil)
        // What it holds fits the budget: 25 changes of 1 MiB are there, 40 are not.
        #expect(try feed.page(after: store.lastSeq - 25, limit: 500, spaces: nil, entities: nil)?.items.count == 25)
        #expect(try feed.page(after: store.lastSeq - 40, limit: 500, spaces: nil, entities: nil) == nil)
    }
}
