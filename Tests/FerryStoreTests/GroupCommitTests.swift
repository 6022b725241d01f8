import FerryTestSupport
import Foundation
import Testing
@testable import FerryStore

@Suite struct GroupCommitTests {
    /// Many threads writing at once: every write lands exactly once, with distinct sequence
    /// numbers, and one failing writer does not take the others down with it.
    @Test func concurrentWritersAllLand() throws {
        let dir = TempDir()
        let store = try makeStore(dir, immutable: ["ledger"])
        try store.put(entity: "ledger", id: "taken", payload: "{}")
        let threads = 8, perThread = 200
        let group = DispatchGroup()
        let failures = LockedCounter()
        for t in 0..<threads {
            group.enter()
            Thread.detachNewThread {
                for i in 0..<perThread {
                    do {
                        try store.put(entity: "item", id: "\(t)-\(i)", payload: #"{"t":\#(t),"i":\#(i)}"#)
                        if i % 50 == 0 {
                            // Fails inside the shared transaction; must roll back only itself.
                            _ = try? store.put(entity: "ledger", id: "taken", payload: #"{"again":true}"#)
                        }
                    } catch {
                        failures.increment()
                    }
                }
                group.leave()
            }
        }
        group.wait()
        #expect(failures.value == 0)
        let stats = try store.stats()
        #expect(stats.records == threads * perThread + 1)
        let changes = try store.changes(since: 0, limit: 10_000).records
        #expect(changes.count == threads * perThread + 1)
        #expect(Set(changes.map(\.seq)).count == changes.count)
        #expect(changes.map(\.seq) == changes.map(\.seq).sorted())
        #expect(try store.get(entity: "ledger", id: "taken")?.payload == "{}")
        #expect(try store.outbox(limit: 100_000).count == threads * perThread + 1)
    }
}

final class LockedCounter: @unchecked Sendable {
    // @unchecked: `count` is only touched with `lock` held.
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}
