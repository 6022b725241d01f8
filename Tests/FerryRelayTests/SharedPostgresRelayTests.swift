import FerryRelay
import FerrySync
import FerryTestSupport
import Foundation
import Testing

/// Two real `ferry-relay` processes on one PostgreSQL database: pushes through either wake
/// long-polls on both, and concurrent pushes through both never share a sequence number.
@Suite(.serialized) struct SharedPostgresRelayTests {
    func pushBody(_ envelopes: [Envelope]) -> [UInt8] {
        Array(("{\"events\":[" + envelopes.map { "\"\(Base64.encode($0.encoded))\"" }.joined(separator: ",") + "]}").utf8)
    }

    func pulled(_ r: HTTPTestClient.Response) -> [[UInt8]] {
        (r.json["events"] as? [String] ?? []).map { Base64.decode($0.utf8) ?? [] }
    }

    /// Two relays on one new database, both started.
    func pair() throws -> (RelayHarness, RelayHarness) {
        let first = try RelayHarness(backend: .postgresql)
        let second = try RelayHarness(backend: .postgresql, conninfo: first.conninfo)
        try first.start()
        try second.start()
        return (first, second)
    }

    @Test func aPushOnOneRelayWakesALongPollOnTheOther() throws {
        let (one, two) = try pair()
        let owner = TestEnvelopes.owner()
        let token = try one.createOwner(owner.description)
        let base = "/v1/owners/\(owner)"
        var end = try #require(try two.call("GET", base + "/events", token: token).json["cursor"] as? String)

        for round in 0..<3 {
            let box = ResponseBox()
            let after = end
            let waiter = Thread {
                box.set(Result { try HTTPTestClient.call(port: two.port, "GET", base + "/events?after=\(after)&wait=20", token: token) })
            }
            waiter.start()
            #expect(eventually(seconds: 5) { (try? two.call("GET", "/metrics").text.contains("ferry_relay_long_pollers 1")) == true })
            let fresh = TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 9000 + Int64(round))
            let pushedAt = Date()
            #expect(try one.call("POST", base + "/events", token: token, body: pushBody([fresh])).status == 200)
            let woke = try box.wait(seconds: 10)
            let latency = box.doneAt!.timeIntervalSince(pushedAt)
            #expect(pulled(woke) == [fresh.encoded])
            end = try #require(woke.json["cursor"] as? String)
            #expect(latency < 1, "round \(round): relay 2's long-poll answered \(latency) s after the push on relay 1")
        }
        // Blobs are in the database too: stored through one relay, read through the other.
        let key = String(repeating: "ab", count: 32)
        let blob = (0..<(3 << 20) + 17).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        #expect(try one.call("PUT", base + "/blobs/\(key)", token: token, body: blob).status == 201)
        let got = try two.call("GET", base + "/blobs/\(key)", token: token)
        #expect(got.status == 200 && got.body.count == blob.count && got.body == blob)
        #expect(try two.call("PUT", base + "/blobs/\(key)", token: token, body: blob).status == 200)
        #expect(one.stop() == 0 && two.stop() == 0)
        #expect(!one.log.contains(token) && !two.log.contains(token))
    }

    @Test func concurrentPushesThroughBothRelaysNeverShareASequenceNumber() throws {
        let (one, two) = try pair()
        let owner = TestEnvelopes.owner()
        let token = try one.createOwner(owner.description)
        let base = "/v1/owners/\(owner)"
        let writers = 4, batches = 12, perBatch = 15
        let total = writers * batches * perBatch
        var made: [[[Envelope]]] = []
        for w in 0..<writers {
            var batchesOfWriter: [[Envelope]] = []
            for b in 0..<batches {
                let millis = Int64(w * 100_000 + b * 100)
                batchesOfWriter.append((0..<perBatch).map { i in
                    TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: millis + Int64(i), bodySize: 200)
                })
            }
            made.append(batchesOfWriter)
        }
        let envelopes = made
        let failures = Counter()
        let done = DispatchGroup()
        for w in 0..<writers {
            let relay = w % 2 == 0 ? one : two
            done.enter()
            Thread {
                defer { done.leave() }
                for batch in envelopes[w] {
                    let r = try? HTTPTestClient.call(port: relay.port, "POST", base + "/events", token: token, body: pushBody(batch))
                    let statuses = (r?.json["results"] as? [[String: Any]] ?? []).map { $0["status"] as? String }
                    if r?.status != 200 || statuses != Array(repeating: "accepted", count: perBatch) { failures.add() }
                }
            }.start()
        }
        // A reader pages through while the writers push, alternating relays and small pages.
        var seen: [[UInt8]] = []
        var cursors: [Int64] = []
        var cursor = "0"
        let deadline = Date().addingTimeInterval(60)
        var turn = 0
        while seen.count < total, Date() < deadline {
            turn += 1
            let relay = turn % 2 == 0 ? one : two
            let page = try relay.call("GET", base + "/events?after=\(cursor)&limit=7&wait=1", token: token)
            #expect(page.status == 200)
            seen += pulled(page)
            cursor = try #require(page.json["cursor"] as? String)
            cursors.append(Int64(cursor) ?? -1)
        }
        done.wait()
        #expect(failures.value == 0)
        let all = Set(envelopes.flatMap { $0.flatMap { $0.map { (e: Envelope) in e.encoded } } })
        #expect(seen.count == total, "the reader saw \(seen.count) of \(total) events")
        #expect(Set(seen).count == seen.count, "the reader saw an event twice")
        #expect(Set(seen) == all)
        #expect(zip(cursors, cursors.dropFirst()).allSatisfy { $0 <= $1 } && !cursors.contains(-1))
        // Every stored event has its own number, and the owner's next number is past them all.
        let storage = try PostgresRelayStorage(conninfo: try #require(one.conninfo), poolSize: 1)
        let everything = try storage.pull(owner, after: .start, limit: total + 10, maxBytes: 1 << 30)
        #expect(everything.events.count == total && Set(everything.events) == all && everything.cursor == Cursor(Int64(total)))
        #expect(try storage.usage(owner)?.events == Int64(total))
    }

    func eventually(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }
}

/// A thread-safe count.
final class Counter: @unchecked Sendable {
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var count = 0
    func add() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}
