import FerryTestSupport
import Foundation
import Testing
@testable import FerryModel
@testable import FerryStore

/// Five replicas, 10,000 random operations, every version delivered to every other replica in a
/// different random order, with duplicates and delays: all replicas end with the same digest,
/// and that state is the one the merge rules say (greatest stamp, or smallest for immutable kinds).
@Suite struct ConvergenceTests {
    struct Message { var to: Int; var version: RecordVersion; var space: String }

    @Test(.timeLimit(.minutes(5)))
    func replicasConverge() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["FERRY_SEED"] ?? "") ?? UInt64.random(in: 0...UInt64(UInt32.max))
        let context = "seed \(seed) (rerun with FERRY_SEED=\(seed))"
        var random = SplitMix64(seed: seed)
        let replicaCount = 5, operations = 10_000
        let dirs = (0..<replicaCount).map { TempDir("replica\($0)") }
        let walls = (0..<replicaCount).map { _ in TestWall() }
        // Clocks disagree by up to a minute either way.
        for wall in walls { wall.advance(Int64.random(in: -60_000...60_000, using: &random)) }
        let stores = try (0..<replicaCount).map { i in
            try makeStore(dirs[i], wall: walls[i], immutable: ["ledger"], node: UInt64(i + 1)) { $0.conflictHistory = 3 }
        }
        for store in stores { try store.createSpace(name: "team") }
        let entities = ["note", "task", "ledger"]
        let ids = (0..<60).map { "ID-\($0)" }

        var inbox: [[Message]] = Array(repeating: [], count: replicaCount)
        var history: [String: [RecordVersion]] = [:]   // every version ever made, by space/entity/id
        var localOps = 0

        func deliver(_ r: Int, count: Int) throws {
            guard !inbox[r].isEmpty else { return }
            var batch: [Message] = []
            for _ in 0..<min(count, inbox[r].count) {
                let k = Int.random(in: 0..<inbox[r].count, using: &random)   // any order
                let message = inbox[r][k]
                if Int.random(in: 0..<10, using: &random) == 0 {
                    batch.append(message)   // delivered now, and again later (a duplicate)
                } else {
                    inbox[r].swapAt(k, inbox[r].count - 1)
                    batch.append(inbox[r].removeLast())
                }
            }
            for space in ["private", "team"] {
                let versions = batch.filter { $0.space == space }.map(\.version)
                if versions.isEmpty { continue }
                let results = try stores[r].applyRemote(space: space, versions, origin: .remote(transport: "sim"))
                for result in results { if case .rejected(let e) = result { Issue.record("\(context): rejected \(e)") } }
            }
        }

        for _ in 0..<operations {
            let r = Int.random(in: 0..<replicaCount, using: &random)
            walls[r].advance(Int64.random(in: -5...40, using: &random))   // sometimes backwards
            let space = Int.random(in: 0..<4, using: &random) == 0 ? "team" : "private"
            let entity = entities.randomElement(using: &random)!
            let id = ids.randomElement(using: &random)!
            var made: RecordVersion?
            do {
                if Int.random(in: 0..<5, using: &random) == 0 {
                    made = try stores[r].delete(space: space, entity: entity, id: id).version
                } else {
                    made = try stores[r].put(space: space, entity: entity, id: id,
                                             payload: #"{"by":\#(r),"op":\#(localOps)}"#).version
                }
                localOps += 1
            } catch {
                // Deleting what this replica does not have, or changing a ledger entry.
                guard error.code == "NotFound" || error.code == "ImmutableRecord" else { throw error }
                made = nil
            }
            if let made, history["\(space)/\(entity)/\(id)"]?.contains(made) != true {
                history["\(space)/\(entity)/\(id)", default: []].append(made)
                for other in 0..<replicaCount where other != r {
                    inbox[other].append(Message(to: other, version: made, space: space))
                }
            }
            // Deliver a little to someone: delays of random length, so concurrent edits happen.
            let target = Int.random(in: 0..<replicaCount, using: &random)
            try deliver(target, count: Int.random(in: 0...6, using: &random))
        }
        // Drain everything, still in random order with duplicates.
        while inbox.contains(where: { !$0.isEmpty }) {
            for r in 0..<replicaCount { try deliver(r, count: Int.random(in: 1...50, using: &random)) }
        }
        #expect(localOps > operations / 2, "\(context): too few operations succeeded")

        let digests = try stores.map { try $0.digest() }
        #expect(Set(digests).count == 1, "\(context): replicas diverged: \(digests)")

        // And the state they agree on is the one the merge rules define.
        for (key, versions) in history {
            let parts = key.split(separator: "/").map(String.init)
            let immutable = parts[1] == "ledger"
            let expected = immutable ? versions.min { $0.hlc < $1.hlc }! : versions.max { $0.hlc < $1.hlc }!
            for (i, store) in stores.enumerated() {
                let got = try store.get(space: parts[0], entity: parts[1], id: parts[2])?.version
                #expect(got == expected, "\(context): replica \(i) has \(String(describing: got)) for \(key), expected \(expected)")
            }
        }
        // Stamps are unique per version: no two different versions share one.
        let all = history.values.flatMap { $0 }
        #expect(Set(all.map(\.hlc)).count == all.count, "\(context): a stamp was issued twice")
    }
}
