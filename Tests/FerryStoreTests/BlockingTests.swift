import Foundation
import Testing
@testable import FerryStore

/// `Blocking.run` gives every call a thread at once: calls that block do not hold the others
/// back (a concurrent queue ran one per CPU and added one a second).
@Suite struct BlockingTests {
    /// Counts the calls that arrived and lets them all go once `count` are in.
    final class Barrier: @unchecked Sendable {
        // @unchecked: `arrived` is only touched with `condition` locked.
        private let condition = NSCondition()
        private var arrived = 0
        private let count: Int
        init(count: Int) { self.count = count }

        /// True when all `count` arrived within `timeout` of this one.
        func arriveAndWait(timeout: TimeInterval) -> Bool {
            condition.lock(); defer { condition.unlock() }
            arrived += 1
            condition.broadcast()
            let deadline = Date().addingTimeInterval(timeout)
            while arrived < count {
                if !condition.wait(until: deadline) { return arrived >= count }
            }
            return true
        }
    }

    @Test func blockingCallsRunAtOnce() async throws {
        // Four times the CPUs: each call blocks until all of them run.
        let calls = 4 * max(2, ProcessInfo.processInfo.activeProcessorCount)
        let barrier = Barrier(count: calls)
        let met = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<calls {
                group.addTask { await Blocking.run { barrier.arriveAndWait(timeout: 3) } }
            }
            var all: [Bool] = []
            for await one in group { all.append(one) }
            return all
        }
        #expect(met.count == calls && met.allSatisfy { $0 }, "\(met.filter { !$0 }.count) of \(calls) calls waited 3 s without the others running")
    }
}
