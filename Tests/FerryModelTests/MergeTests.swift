import Testing
@testable import FerryModel

@Suite struct MergeTests {
    func s(_ millis: Int64, _ counter: UInt16 = 0, _ node: UInt64 = 1) -> Stamp {
        Stamp(millis: millis, counter: counter, node: NodeID(node))
    }

    @Test func newRecordApplies() {
        #expect(Merge.decide(current: nil, incoming: s(1), immutable: false) == .apply)
        #expect(Merge.decide(current: nil, incoming: s(1), immutable: true) == .apply)
    }

    @Test func greatestStampWins() {
        #expect(Merge.decide(current: s(1), incoming: s(2), immutable: false) == .apply)
        #expect(Merge.decide(current: s(2), incoming: s(1), immutable: false) == .lose)
        #expect(Merge.decide(current: s(1, 1), incoming: s(1, 2), immutable: false) == .apply)
        #expect(Merge.decide(current: s(1, 1, 5), incoming: s(1, 1, 4), immutable: false) == .lose)
        #expect(Merge.decide(current: s(1, 1, 4), incoming: s(1, 1, 5), immutable: false) == .apply)
    }

    @Test func sameStampIsIdempotent() {
        #expect(Merge.decide(current: s(7, 3, 9), incoming: s(7, 3, 9), immutable: false) == .duplicate)
        #expect(Merge.decide(current: s(7, 3, 9), incoming: s(7, 3, 9), immutable: true) == .duplicate)
    }

    @Test func immutableKindsKeepTheFirstVersion() {
        #expect(Merge.decide(current: s(5), incoming: s(3), immutable: true) == .apply)
        #expect(Merge.decide(current: s(3), incoming: s(5), immutable: true) == .lose)
    }

    /// The outcome does not depend on the order versions arrive in.
    @Test func orderIndependent() {
        let stamps = (0..<20).map { s(Int64($0 % 5), UInt16($0 % 3), UInt64($0 % 4)) }
        for immutable in [false, true] {
            var winners = Set<Stamp>()
            for _ in 0..<50 {
                var current: Stamp?
                for stamp in stamps.shuffled() + stamps.shuffled() where Merge.decide(current: current, incoming: stamp, immutable: immutable) == .apply {
                    current = stamp
                }
                winners.insert(current!)
            }
            #expect(winners.count == 1)
            #expect(winners.first == (immutable ? stamps.min() : stamps.max()))
        }
    }

    @Test func originText() {
        #expect(ChangeOrigin(parsing: ChangeOrigin.remote(transport: "relay").description) == .remote(transport: "relay"))
        #expect(ChangeOrigin(parsing: ChangeOrigin.imported(source: "a.bundle").description) == .imported(source: "a.bundle"))
        #expect(ChangeOrigin(parsing: "local") == .local)
    }
}
