import FerryModel
import FerryTestSupport
import Testing
@testable import FerrySync

/// The own log's stream table answers as one dictionary would, whichever of its parts a
/// stream falls in.
@Suite struct StreamTableTests {
    @Test func itAnswersAsOneDictionaryWould() {
        var rng = SplitMix64(seed: 11)
        var table = StreamTable()
        var reference: [StreamID: (stamp: Stamp, size: UInt32)] = [:]
        // Ids in every part (each first byte), some twice, with stamps going up and down.
        var ids: [StreamID] = (0..<256).map { ID128(high: UInt64($0) << 56 | (rng.next() >> 8), low: rng.next()) }
        ids += (0..<2000).map { _ in ID128(high: rng.next(), low: rng.next()) }
        for round in 0..<3 {
            for (i, id) in ids.enumerated() where (i + round) % 3 != 0 {
                let entry = (stamp: Stamp(millis: Int64(rng.next() % 1000), counter: 0, node: NodeID(1)), size: UInt32(i % 500))
                let old = table.updateValue(entry, forKey: id)
                let expected = reference.updateValue(entry, forKey: id)
                #expect(old?.stamp == expected?.stamp && old?.size == expected?.size)
            }
            #expect(table.count == reference.count)
        }
        for id in ids {
            #expect(table[id]?.stamp == reference[id]?.stamp && table[id]?.size == reference[id]?.size)
        }
        #expect(table[ID128(high: 0, low: 0)] == nil)
        table.removeAll()
        #expect(table.count == 0 && ids.allSatisfy { table[$0] == nil })
    }
}
