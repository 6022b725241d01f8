import FerryModel
import Foundation
import Synchronization
import Testing
@testable import FerryDaemon
@testable import FerryStore
@testable import FerryVarlink

@Suite struct ChangeFeedTests {
    /// A store in a new directory (the caller removes it), with a feed over it.
    static func feed() throws -> (dir: String, store: Store, hub: WatchHub, feed: ChangeFeed) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("feed-\(UUID().uuidString)").path
        var config = StoreConfiguration(directory: dir)
        config.durability = .normal
        let store = try Store(configuration: config)
        let hub = WatchHub(lastSeq: store.lastSeq)
        return (dir, store, hub, ChangeFeed(store: store, hub: hub))
    }

    /// The shared feed keeps at most `maxBytes` of changes, not only `capacity` of them: 48
    /// records of 1 MiB are 48 MiB, so the oldest fall out and a watcher that far behind reads
    /// the store; the newest are still served from the feed.
    @Test func largeChangesAreKeptUpToTheByteBudget() throws {
        let (dir, store, hub, feed) = try Self.feed()
        defer { try? FileManager.default.removeItem(atPath: dir) }
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

    /// Writes while nobody watched (an import of three feeds' worth) are not all read and
    /// encoded when the first watcher comes: the feed reads only the changes it can keep,
    /// and those are the store's, while an older cursor is sent to the store.
    @Test func aBacklogLongerThanTheFeedIsReadFromItsTail() throws {
        let (dir, store, hub, feed) = try Self.feed()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let start = store.lastSeq
        for b in 0..<(3 * ChangeFeed.capacity / 1024) {
            _ = try store.putMany((0..<1024).map { PutRequest(entity: "item", id: "i\(b)-\($0)", payload: #"{"b":\#(b)}"#) })
        }
        hub.committed(store.lastSeq)
        let recent = try #require(try feed.page(after: store.lastSeq - 100, limit: 500, spaces: nil, entities: nil))
        #expect(recent.items.map(\.seq) == (try store.changes(since: store.lastSeq - 100).records.map(\.seq)))
        #expect(recent.through == store.lastSeq)
        #expect(feed.changesRead <= ChangeFeed.capacity)
        #expect(try feed.page(after: start, limit: 10, spaces: nil, entities: nil) == nil)
        // The oldest change it holds is still served.
        let oldest = try #require(try feed.page(after: store.lastSeq - Int64(ChangeFeed.capacity), limit: 10, spaces: nil, entities: nil))
        #expect(oldest.items.map(\.seq) == (try store.changes(since: store.lastSeq - Int64(ChangeFeed.capacity), limit: 10).records.map(\.seq)))
    }

    /// Records whose ids are equal as Swift strings but differ in bytes ("é" precomposed and
    /// decomposed) are two records in the store, which compares ids bytewise: the feed gives
    /// each of them, in one commit or in two, as the store's change log does.
    @Test func idsThatDifferOnlyInTheirBytesAreDifferentRecords() throws {
        let (dir, store, hub, feed) = try Self.feed()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let start = store.lastSeq
        _ = try #require(try feed.page(after: start, limit: 500, spaces: nil, entities: nil))
        _ = try store.put(entity: "note", id: "caf\u{E9}", payload: #"{"v":1}"#)
        hub.committed(store.lastSeq)
        _ = try feed.page(after: store.lastSeq, limit: 500, spaces: nil, entities: nil)
        _ = try store.putMany([PutRequest(entity: "note", id: "cafe\u{301}", payload: #"{"v":2}"#),
                               PutRequest(entity: "note", id: "n\u{303}", payload: "{}"),
                               PutRequest(entity: "note", id: "\u{F1}", payload: "{}")])
        hub.committed(store.lastSeq)
        let page = try #require(try feed.page(after: start, limit: 500, spaces: nil, entities: nil))
        #expect(page.items.map(\.seq) == (try store.changes(since: start).records.map(\.seq)))
        #expect(page.items.count == 4)
        #expect(Set(page.items.map { Array($0.key.id.utf8) }).count == 4)
    }

    /// A watcher behind gets a record changed several times since its cursor once, at its
    /// newest change, from the feed as from the store (docs/api.md, Watch); a record whose
    /// newest change is past the page's end comes on the next page.
    @Test func aRecordChangedSeveralTimesComesOnceAtItsNewestChange() throws {
        let (dir, store, hub, feed) = try Self.feed()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let start = store.lastSeq
        _ = try #require(try feed.page(after: start, limit: 500, spaces: nil, entities: nil))
        for v in 1...3 {
            _ = try store.put(entity: "note", id: "a", payload: #"{"v":\#(v)}"#)
            _ = try store.put(entity: "note", id: "b\(v)", payload: "{}")
            hub.committed(store.lastSeq)
            _ = try feed.page(after: store.lastSeq, limit: 500, spaces: nil, entities: nil)   // the feed reads each commit
        }
        let page = try #require(try feed.page(after: start, limit: 500, spaces: nil, entities: nil))
        let fromStore = try store.changes(since: start).records.map(\.seq)
        #expect(page.items.map(\.seq) == fromStore)
        #expect(page.items.filter { $0.key.id == "a" }.count == 1)
        #expect(page.items.count == 4 && page.through == store.lastSeq)
        // Cut after the first b: a's newest change is still ahead, so a is not on this page.
        let first = try #require(try feed.page(after: start, limit: 1, spaces: nil, entities: nil))
        #expect(first.items.map(\.key) == [ChangeFeed.Key(space: "private", entity: "note", id: "b1")])
        let rest = try #require(try feed.page(after: first.through, limit: 500, spaces: nil, entities: nil))
        #expect(rest.items.map(\.seq) == Array(fromStore.dropFirst()))
    }

    /// The changes a commit hands over are taken as the store gives them: two versions of one
    /// record applied in one transaction come once, at the newest; a commit that does not
    /// follow what the feed holds is left for the feed to read from the store.
    @Test func aCommitsOwnChangesAreTakenAsTheStoreGivesThem() throws {
        let (dir, store, hub, feed) = try Self.feed()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let commits = Mutex<[CommittedChanges]>([])
        store.setCommitObserver { commit in commits.withLock { $0.append(commit) } }
        let start = store.lastSeq
        let node = NodeID(0xbee)
        func version(_ id: String, _ v: Int, millis: Int64) -> RecordVersion {
            RecordVersion(entity: "note", id: id, hlc: Stamp(millis: millis, counter: 0, node: node), deleted: false, payload: #"{"v":\#(v)}"#)
        }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        _ = try store.applyRemote([version("a", 1, millis: now), version("b", 1, millis: now), version("a", 2, millis: now + 1),
                                   version("c", 1, millis: now)], origin: .remote(transport: "t"))
        _ = try store.put(entity: "note", id: "d", payload: #"{"v":1}"#)
        let taken = commits.withLock { $0 }
        #expect(taken.count == 2 && taken[0].after == start && taken[0].records.count == 4 && taken[1].after == taken[0].through)
        for commit in taken { feed.take(commit) }
        // The hub was not told, so the feed read nothing from the store: this is what it took.
        let page = try #require(try feed.page(after: start, limit: 500, spaces: nil, entities: nil))
        let fromStore = try store.changes(since: start)
        #expect(page.items.map(\.seq) == fromStore.records.map(\.seq))
        #expect(page.items.map(\.key) == ["b", "a", "c", "d"].map { ChangeFeed.Key(space: "private", entity: "note", id: $0) })
        #expect(page.through == store.lastSeq)
        let replies = page.items.map { String(decoding: $0.reply.bytes, as: UTF8.self) }
        #expect(replies[1].contains(#""payload":{"v":2}"#))
        // A commit that does not follow what the feed holds is not taken.
        let skipped = CommittedChanges(after: store.lastSeq + 5, through: store.lastSeq + 6, records: [])
        feed.take(skipped)
        #expect(try feed.page(after: start, limit: 500, spaces: nil, entities: nil)?.through == store.lastSeq)
        hub.committed(store.lastSeq)
    }

    /// Every change from `cursor` on, as the store gives them, a page at a time.
    static func storeChanges(_ store: Store, after cursor: Int64) throws -> [Int64] {
        var seqs: [Int64] = []
        var at = cursor
        while at < store.lastSeq {
            let page = try store.changes(since: at, limit: 1000)
            seqs += page.records.map(\.seq)
            at = page.through
        }
        return seqs
    }

    /// Four times `capacity` changes over 40,000 records (so records come back after their
    /// older changes fell out, and more records pass than the feed keeps entries for), one
    /// changed twice in each remote commit: a feed that
    /// reads the store and one that takes each commit agree with the store at every cursor
    /// they still hold, and send a cursor they no longer hold to the store.
    @Test func theFeedAgreesWithTheStoreAfterDroppingManyTimes() throws {
        let (dir, store, hub, reading) = try Self.feed()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let taking = ChangeFeed(store: store, hub: hub)
        let commits = Mutex<[CommittedChanges]>([])
        store.setCommitObserver { commit in commits.withLock { $0.append(commit) } }
        let start = store.lastSeq
        _ = try #require(try reading.page(after: start, limit: 1, spaces: nil, entities: nil))
        var generator = SystemRandomNumberGenerator()
        var written = 0
        var round = 0
        while written < 4 * ChangeFeed.capacity {
            // 500 puts over 40,000 ids; then a remote commit with one record in it twice.
            var ids = Set<Int>()
            while ids.count < 500 { ids.insert(Int.random(in: 0..<40_000, using: &generator)) }
            let requests = ids.map { PutRequest(entity: "note", id: "n\($0)", payload: #"{"r":\#(round)}"#) }
            _ = try store.putMany(requests)
            let twice = "n\(Int.random(in: 0..<40_000, using: &generator))", once = "n\(Int.random(in: 0..<40_000, using: &generator))"
            let later = Int64(Date().timeIntervalSince1970 * 1000) + 100
            func version(_ id: String, _ millis: Int64) -> RecordVersion {
                RecordVersion(entity: "note", id: id, hlc: Stamp(millis: millis, counter: 0, node: NodeID(0xbee)), deleted: false, payload: "{}")
            }
            _ = try store.applyRemote([version(twice, later), version(once, later), version(twice, later + 1)],
                                      origin: .remote(transport: "t"))
            for commit in commits.withLock({ c in defer { c.removeAll() }; return c }) { taking.take(commit) }
            hub.committed(store.lastSeq)
            _ = try reading.page(after: store.lastSeq, limit: 1, spaces: nil, entities: nil)   // it reads each commit
            written += requests.count + 2
            round += 1
        }
        // The feeds dropped most of it: the first cursor is the store's to serve.
        #expect(try reading.page(after: start, limit: 10, spaces: nil, entities: nil) == nil)
        #expect(try taking.page(after: start, limit: 10, spaces: nil, entities: nil) == nil)
        // What the store gives after a cursor: each record at its newest change past it.
        let recent = try Self.storeChanges(store, after: start)
        for feed in [reading, taking] {
            // The oldest cursor each feed still serves, then every cursor just after it and
            // some further on: each page is the store's.
            var oldest = start
            while try feed.page(after: oldest, limit: 1, spaces: nil, entities: nil) == nil { oldest += 1 }
            #expect(store.lastSeq - oldest >= Int64(ChangeFeed.capacity / 2))
            for cursor in Array(oldest...(oldest + 40)) + Array(stride(from: oldest + 41, through: store.lastSeq, by: 97)) {
                let page = try #require(try feed.page(after: cursor, limit: 100_000, spaces: nil, entities: nil))
                #expect(page.items.map(\.seq) == recent.filter { $0 > cursor }, "cursor \(cursor), oldest \(oldest)")
                #expect(page.through == store.lastSeq)
            }
        }
    }
}
