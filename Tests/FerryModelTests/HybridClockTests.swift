import Synchronization
import Testing
@testable import FerryModel

/// A wall clock the test moves by hand.
final class ManualWall: Sendable {
    let now = Atomic<Int64>(1_764_417_600_000)
    func set(_ value: Int64) { now.store(value, ordering: .relaxed) }
    func advance(_ delta: Int64) { now.add(delta, ordering: .relaxed) }
    var read: @Sendable () -> Int64 { { self.now.load(ordering: .relaxed) } }
}

@Suite struct HybridClockTests {
    let node = NodeID(1)

    @Test func followsTheWallClock() {
        let wall = ManualWall()
        var clock = HybridClock(node: node, wallClock: wall.read)
        let a = clock.now()
        #expect(a.millis == wall.read() && a.counter == 0 && a.node == node)
        wall.advance(5)
        let b = clock.now()
        #expect(b.millis == a.millis + 5 && b.counter == 0)
    }

    @Test func neverGoesBackwardsWhenTheWallClockDoes() {
        let wall = ManualWall()
        var clock = HybridClock(node: node, wallClock: wall.read)
        var last = clock.now()
        wall.advance(-60_000)   // NTP stepped the clock back a minute
        for _ in 0..<100 {
            let next = clock.now()
            #expect(next > last)
            #expect(next.millis == last.millis)   // logical time holds until the wall catches up
            last = next
        }
        wall.advance(120_000)
        let caughtUp = clock.now()
        #expect(caughtUp.millis == wall.read() && caughtUp.counter == 0)
    }

    @Test func counterOverflowMovesToTheNextMillisecond() {
        let wall = ManualWall()
        var clock = HybridClock(node: node, wallClock: wall.read)
        let start = clock.now()
        var last = start
        for _ in 0..<70_000 {   // more than 65,536 stamps in one wall-clock millisecond
            let next = clock.now()
            #expect(next > last)
            last = next
        }
        #expect(last.millis == start.millis + 1)
        #expect(last.counter == UInt16((70_000 - 65_536) % 65_536))
    }

    @Test func observingAdvancesPastRemoteStamps() {
        let wall = ManualWall()
        var clock = HybridClock(node: node, wallClock: wall.read)
        let remote = Stamp(millis: wall.read() + 10_000, counter: 7, node: NodeID(2))
        let observed = clock.observe(remote)
        #expect(observed)
        let next = clock.now()
        #expect(next > remote)
        #expect(next.millis == remote.millis && next.counter == 8)
    }

    @Test func observingAnOlderStampChangesNothing() {
        let wall = ManualWall()
        var clock = HybridClock(node: node, wallClock: wall.read)
        let a = clock.now()
        let observed = clock.observe(Stamp(millis: a.millis - 1000, counter: 3, node: NodeID(2)))
        #expect(observed)
        #expect(clock.last == a)
    }

    @Test func driftGuardKeepsFarFutureStampsFromDraggingTheClock() {
        let wall = ManualWall()
        var clock = HybridClock(node: node, maxDriftMillis: 300_000, wallClock: wall.read)
        let farAhead = Stamp(millis: wall.read() + 3_600_000, counter: 0, node: NodeID(2))
        let refused = clock.observe(farAhead)
        #expect(refused == false)
        let next = clock.now()
        #expect(next.millis == wall.read())      // not dragged an hour ahead
        let justInside = Stamp(millis: wall.read() + 299_000, counter: 0, node: NodeID(2))
        let accepted = clock.observe(justInside)
        #expect(accepted)
        let after = clock.now()
        #expect(after > justInside)
    }

    @Test func aLocalEditAlwaysBeatsTheVersionItEdits() {
        let wall = ManualWall()
        var clock = HybridClock(node: NodeID(0), maxDriftMillis: 300_000, wallClock: wall.read)
        // Even a version stamped far in the future (beyond the drift guard) by a node with a
        // greater id loses to an edit made after seeing it.
        let future = Stamp(millis: wall.read() + 86_400_000, counter: 0xffff, node: NodeID(.max))
        let edit = clock.stamp(after: future)
        #expect(edit > future)
        let plain = clock.now()
        #expect(plain.millis == wall.read())   // and the clock itself stayed put
        let near = Stamp(millis: wall.read() + 10, counter: 3, node: NodeID(.max))
        let edit2 = clock.stamp(after: near)
        #expect(edit2 > near)
    }

    @Test func resumesFromPersistedState() {
        let wall = ManualWall()
        let persisted = Stamp(millis: wall.read() + 1000, counter: 9, node: node)
        var clock = HybridClock(node: node, last: persisted, wallClock: wall.read)
        let next = clock.now()
        #expect(next > persisted)
    }
}
