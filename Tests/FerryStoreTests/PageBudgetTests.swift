import FerryTestSupport
import Foundation
import Testing
@testable import FerryModel
@testable import FerryStore

/// Pages of `list` and `changes` are bounded by bytes as well as by count, so that a page of
/// large records fits in one Varlink message (16 MiB), and paging still returns every record
/// exactly once, in order.
@Suite struct PageBudgetTests {
    /// A payload of about `bytes` bytes of JSON text.
    static func payload(_ n: Int, bytes: Int, done: Bool = false) -> String {
        #"{"done":\#(done),"n":\#(n),"text":""# + String(repeating: "x", count: bytes - 40) + #""}"#
    }

    /// Every page of `list`, following `next` until it is absent.
    static func pages(_ store: Store, entity: String, limit: Int, includeDeleted: Bool = false, order: Store.ListOrder = .id,
                      where filters: [(field: String, value: FilterValue)] = [], maxBytes: Int = Store.maxPageBytes) throws -> [Store.Page] {
        var pages: [Store.Page] = []
        var after: String?
        repeat {
            let page = try store.list(entity: entity, after: after, limit: limit, includeDeleted: includeDeleted, order: order,
                                      where: filters, maxBytes: maxBytes)
            pages.append(page)
            after = page.next
        } while after != nil && pages.count < 1000
        return pages
    }

    @Test func aPageOfLargeRecordsStopsAtTheByteBudgetAndPagingReturnsEveryRecordOnce() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        // 20 records just under the 1 MiB payload limit: 20 MiB, more than one message holds.
        let size = (1 << 20) - 100
        var ids: [String] = []
        for batch in 0..<4 {
            let requests = (0..<5).map { k in
                let n = batch * 5 + k
                return PutRequest(entity: "huge", id: String(format: "H%02d", 19 - n), payload: Self.payload(n, bytes: size))
            }
            ids += try store.putMany(requests).map(\.id)
        }

        let first = try store.list(entity: "huge", limit: 1000)
        #expect(first.records.count >= 1 && first.records.count < 20, "a page stops at the byte budget: \(first.records.count) records")
        #expect(first.records.reduce(0) { $0 + ($1.payload?.utf8.count ?? 0) } <= 8 << 20)
        #expect(first.next == first.records.last?.id)

        for order in [Store.ListOrder.id, .stamp] {
            let pages = try Self.pages(store, entity: "huge", limit: 1000, order: order)
            #expect(pages.count > 2 && pages.count < 20, "\(order): \(pages.map(\.records.count))")
            #expect(pages.allSatisfy { !$0.records.isEmpty })
            #expect(pages.dropLast().allSatisfy { $0.next != nil } && pages.last?.next == nil)
            let listed = pages.flatMap(\.records).map(\.id)
            // By id: H00...H19; by stamp: in the order they were written.
            #expect(listed == (order == .id ? ids.sorted() : ids), "\(order)")
            for page in pages {
                #expect(page.records.reduce(0) { $0 + Store.pageBytes(of: $1) } <= Store.maxPageBytes)
            }
        }

        // The change log too: bounded pages, every record once, in change-log order.
        var since: Int64 = 0
        var changed: [String] = []
        var reads = 0
        while reads < 100 {
            let page = try store.changes(since: since, limit: 500)
            reads += 1
            if page.through == since { break }
            #expect(page.records.count >= 1 && page.records.reduce(0) { $0 + Store.pageBytes(of: $1) } <= Store.maxPageBytes)
            changed += page.records.map(\.id)
            since = page.through
        }
        #expect(changed == ids && reads > 3)
    }

    @Test func shortPagesKeepOrderAndNextWithFiltersAndTombstones() throws {
        let dir = TempDir()
        let wall = TestWall()
        let store = try makeStore(dir, wall: wall)
        // Sizes that vary, so pages break at different counts; ids written out of order.
        for i in 0..<40 {
            wall.advance(1)
            try store.put(entity: "doc", id: String(format: "D%02d", (i * 7) % 40),
                          payload: Self.payload(i, bytes: 60 + (i * 37) % 400, done: i % 3 == 0))
        }
        for i in stride(from: 0, to: 40, by: 5) {
            wall.advance(1)
            try store.delete(entity: "doc", id: String(format: "D%02d", i))
        }
        let cases: [(Bool, Store.ListOrder, [(field: String, value: FilterValue)])] = [
            (false, .id, []), (true, .id, []), (false, .stamp, []), (true, .stamp, []),
            (false, .id, [("done", .bool(true))]), (true, .stamp, [("done", .bool(false))]),
        ]
        for (includeDeleted, order, filters) in cases {
            let whole = try store.list(entity: "doc", limit: 1000, includeDeleted: includeDeleted, order: order, where: filters)
            #expect(whole.next == nil && !whole.records.isEmpty)
            for limit in [1, 3, 1000] {
                for maxBytes in [1, 700, 2000] {
                    let pages = try Self.pages(store, entity: "doc", limit: limit, includeDeleted: includeDeleted, order: order,
                                               where: filters, maxBytes: maxBytes)
                    let label = "includeDeleted \(includeDeleted), \(order), \(filters.map(\.field)), limit \(limit), \(maxBytes) bytes"
                    #expect(pages.flatMap(\.records) == whole.records, "\(label)")
                    #expect(pages.allSatisfy { !$0.records.isEmpty && $0.records.count <= limit }, "\(label)")
                    #expect(pages.dropLast().allSatisfy { $0.next != nil } && pages.last?.next == nil, "\(label)")
                    for page in pages where page.records.count > 1 {
                        #expect(page.records.reduce(0) { $0 + Store.pageBytes(of: $1) } <= maxBytes, "\(label)")
                    }
                    if maxBytes == 1 { #expect(pages.count == whole.records.count, "one record a page: \(label)") }
                }
            }
        }

        // The change log with a small budget: the same records as read whole, in the same order.
        let whole = try store.changes(since: 0, entities: ["doc"], limit: 10_000, maxBytes: .max)
        var since: Int64 = 0
        var changed: [Record] = []
        while true {
            let page = try store.changes(since: since, entities: ["doc"], limit: 7, maxBytes: 900)
            if page.through == since { break }
            changed += page.records
            since = page.through
        }
        #expect(changed == whole.records && since == whole.through)
    }
}
