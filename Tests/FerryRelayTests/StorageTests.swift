import FerryRelay
import FerrySync
import FerryTestSupport
import Foundation
import Synchronization
import Testing

/// `RelayStorage`'s promises, checked on every backend (the same test on SQLite and PostgreSQL).
@Suite struct RelayStorageTests {
    let dir = TempDir("relay-storage")
    let owner = TestEnvelopes.owner()

    func storage(_ backend: TestBackend) throws -> any RelayStorage {
        let s = try backend.makeStorage(in: dir)
        try s.createOwner(owner, quotaBytes: nil, now: 1)
        return s
    }

    @Test(arguments: TestBackend.allCases) func pushDedupesAndPullsInPages(_ backend: TestBackend) throws {
        let s = try storage(backend)
        let envelopes = (0..<5).map { TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 1000 + Int64($0)) }
        #expect(try s.push(owner, events: envelopes.map(TestEnvelopes.incoming), quotaBytes: 1 << 30, now: 10) == Array(repeating: .stored, count: 5))
        #expect(try s.push(owner, events: [TestEnvelopes.incoming(envelopes[0])], quotaBytes: 1 << 30, now: 11) == [.duplicate])
        let first = try s.pull(owner, after: .start, limit: 2, maxBytes: 1 << 20)
        #expect(first.events == envelopes[0..<2].map(\.encoded) && first.more)
        let second = try s.pull(owner, after: first.cursor, limit: 10, maxBytes: 1 << 20)
        #expect(second.events == envelopes[2...].map(\.encoded) && !second.more)
        let empty = try s.pull(owner, after: second.cursor, limit: 10, maxBytes: 1 << 20)
        #expect(empty.events.isEmpty && empty.cursor == second.cursor && !empty.more)
        // A byte cap stops a page early, but never below one event.
        let capped = try s.pull(owner, after: .start, limit: 10, maxBytes: 1)
        #expect(capped.events.count == 1 && capped.more)
        let u = try s.usage(owner)!
        #expect(u.events == 5 && u.eventBytes == Int64(envelopes.map(\.encoded.count).reduce(0, +)) && u.lastPushAt == 11)
        let other = TestEnvelopes.owner()
        #expect(throws: RelayStorageError.unknownOwner(other)) { try s.push(other, events: [], quotaBytes: 1, now: 1) }
    }

    /// An event id already stored, pushed again under another stream (a device reusing ids),
    /// is a duplicate: it neither fails the batch nor replaces anything; the rest is stored.
    @Test(arguments: TestBackend.allCases) func aReusedEventIDIsADuplicateAndTheBatchGoesOn(_ backend: TestBackend) throws {
        let s = try storage(backend)
        let first = TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 1000)
        var reused = TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 2000)
        reused.header.event = first.header.event
        let fresh = TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 3000)
        #expect(try s.push(owner, events: [TestEnvelopes.incoming(first)], quotaBytes: 1 << 30, now: 1) == [.stored])
        #expect(try s.push(owner, events: [reused, fresh].map(TestEnvelopes.incoming), quotaBytes: 1 << 30, now: 2) == [.duplicate, .stored])
        // Also when the reused id arrives as a newer version of a stream already stored.
        var newer = TestEnvelopes.make(owner: owner, stream: fresh.header.stream, millis: 4000)
        newer.header.event = first.header.event
        #expect(try s.push(owner, events: [TestEnvelopes.incoming(newer)], quotaBytes: 1 << 30, now: 3) == [.duplicate])
        let page = try s.pull(owner, after: .start, limit: 10, maxBytes: 1 << 20)
        #expect(page.events == [first.encoded, fresh.encoded])
        #expect(try s.usage(owner)!.events == 2)
    }

    /// One batch that holds a stream twice (newer after older, and older after newer), an event
    /// twice, and the event id of a version the batch itself replaced: taken one by one in
    /// order, with the same outcomes, survivors and usage on every backend.
    @Test(arguments: TestBackend.allCases) func aBatchIsTakenEventByEventInOrder(_ backend: TestBackend) throws {
        let s = try storage(backend)
        let (x, y) = (TestEnvelopes.stream(), TestEnvelopes.stream())
        let stored = TestEnvelopes.make(owner: owner, stream: y, millis: 500)
        #expect(try s.push(owner, events: [TestEnvelopes.incoming(stored)], quotaBytes: 1 << 30, now: 1) == [.stored])
        let x1 = TestEnvelopes.make(owner: owner, stream: x, millis: 1000)
        let x2 = TestEnvelopes.make(owner: owner, stream: x, millis: 2000)
        let y2 = TestEnvelopes.make(owner: owner, stream: y, millis: 3000)
        let y1 = TestEnvelopes.make(owner: owner, stream: y, millis: 1000)
        let z = TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 4000)
        let batch = [x1, x2, y2, y1, z, z, x1, stored]
        #expect(try s.push(owner, events: batch.map(TestEnvelopes.incoming), quotaBytes: 1 << 30, now: 2)
                == [.stored, .stored, .stored, .superseded, .stored, .duplicate, .superseded, .superseded])
        let page = try s.pull(owner, after: .start, limit: 100, maxBytes: 1 << 20)
        #expect(page.events == [x2.encoded, y2.encoded, z.encoded])
        let u = try s.usage(owner)!
        #expect(u.events == 3 && u.eventBytes == Int64([x2, y2, z].map(\.encoded.count).reduce(0, +)))
        // The sequence numbers are those of storing x1 too (and removing it again): the next
        // push continues after them.
        let later = TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 5000)
        _ = try s.push(owner, events: [TestEnvelopes.incoming(later)], quotaBytes: 1 << 30, now: 3)
        let after = try s.pull(owner, after: page.cursor, limit: 100, maxBytes: 1 << 20)
        #expect(after.events == [later.encoded])
    }

    /// Random batches mixing new streams, newer, equal and older versions of streams stored
    /// before or earlier in the batch, repeats, and event ids reused under other streams: each
    /// event's outcome, the survivors (pulled a few at a time, in the order they were stored),
    /// the usage and the quota the batch needs are what taking the events one by one as
    /// relay.openapi.yaml says gives, on every backend. (SQLite answered an older version whose
    /// event id was stored `superseded`, PostgreSQL `duplicate`, until this test.)
    @Test(arguments: TestBackend.allCases) func randomBatchesGetTheDocumentedOutcomesOnEveryBackend(_ backend: TestBackend) throws {
        var rng = SplitMix64(seed: 5)  // the same batches every run
        let s = try backend.makeStorage(in: dir)
        for round in 0..<12 {
            let owner = TestEnvelopes.owner()
            try s.createOwner(owner, quotaBytes: nil, now: 1)
            let streams = (0..<8).map { _ in TestEnvelopes.stream() }
            let known = (0..<4).map { TestEnvelopes.make(owner: owner, stream: streams[$0], millis: 1000) }
            #expect(try s.push(owner, events: known.map(TestEnvelopes.incoming), quotaBytes: 1 << 30, now: 1) == Array(repeating: .stored, count: 4))
            // What the relay holds, kept by the test: per stream its current version.
            var current: [StreamID: Envelope] = Dictionary(uniqueKeysWithValues: known.map { ($0.header.stream, $0) })
            // When each stream's current version was stored: pulls give them in that order.
            var storedAt: [StreamID: Int] = Dictionary(uniqueKeysWithValues: known.enumerated().map { ($1.header.stream, $0 - known.count) })
            var batch: [Envelope] = []
            for _ in 0..<40 {
                let stream = streams[Int.random(in: 0..<streams.count, using: &rng)]
                var e = TestEnvelopes.make(owner: owner, stream: stream, millis: Int64.random(in: 500...3000, using: &rng) / 250 * 250)
                if Int.random(in: 0..<8, using: &rng) == 0, let other = (batch + known).randomElement(using: &rng), other.header.stream != stream {
                    e.header.event = other.header.event  // a device reusing an id
                }
                batch.append(e)
                if Bool.random(using: &rng) { batch.append(batch[Int.random(in: 0..<batch.count, using: &rng)]) }
            }
            var expected: [FerryRelay.PushOutcome] = []
            // As relay.openapi.yaml says: an event id stored is a duplicate; else a version of a
            // stream no newer than the stored one is not kept (a duplicate at the same stamp);
            // else it is stored.
            for e in batch {
                let stored = current[e.header.stream]
                if Set(current.values.map(\.header.event)).contains(e.header.event) || stored?.header.stamp == e.header.stamp {
                    expected.append(.duplicate)
                } else if let stored, stored.header.stamp > e.header.stamp {
                    expected.append(.superseded)
                } else {
                    current[e.header.stream] = e
                    storedAt[e.header.stream] = expected.count
                    expected.append(.stored)
                }
            }
            // A quota one byte short of what the batch needs refuses all of it; exactly enough
            // takes it.
            let before = Int64(known.map(\.encoded.count).reduce(0, +))
            let needed = Int64(current.values.map(\.encoded.count).reduce(0, +)) - before
            if needed > 0 {
                #expect(throws: RelayStorageError.quotaExceeded(quotaBytes: before + needed - 1, usedBytes: before, neededBytes: needed)) {
                    try s.push(owner, events: batch.map(TestEnvelopes.incoming), quotaBytes: before + needed - 1, now: 2)
                }
                #expect(try s.usage(owner)!.eventBytes == before)
            }
            let got = try s.push(owner, events: batch.map(TestEnvelopes.incoming), quotaBytes: before + max(needed, 0), now: 2)
            #expect(got == expected, "round \(round): at \(zip(got, expected).enumerated().filter { $0.1.0 != $0.1.1 }.map { "\($0.0): \($0.1.0) for \($0.1.1)" })")
            // Pulled three at a time, in the order they were stored.
            var pulled: [[UInt8]] = [], cursor = Cursor.start
            while true {
                let page = try s.pull(owner, after: cursor, limit: 3, maxBytes: 1 << 24)
                pulled += page.events
                cursor = page.cursor
                if !page.more { break }
            }
            #expect(pulled == current.values.sorted { storedAt[$0.header.stream]! < storedAt[$1.header.stream]! }.map(\.encoded), "round \(round)")
            let u = try s.usage(owner)!
            #expect(u.events == Int64(current.count) && u.eventBytes == Int64(current.values.map(\.encoded.count).reduce(0, +)), "round \(round)")
        }
    }

    /// Readers pulling small pages from their own cursors while random batches replace
    /// versions in place (tombstones among them) and tombstones past their retention are
    /// dropped: once each reader has read to the end, it holds the newest version of every
    /// stream still stored, and the drops and usage are the model's, on every backend (a cursor
    /// stays good across compaction; nothing is skipped).
    @Test(arguments: TestBackend.allCases) func readersBetweenRandomPushesMissNoNewestVersion(_ backend: TestBackend) throws {
        var rng = SplitMix64(seed: 23)
        let s = try backend.makeStorage(in: dir)
        var clock: Int64 = 100  // stored_at; every owner of the storage shares it
        for round in 0..<6 {
            let owner = TestEnvelopes.owner()
            try s.createOwner(owner, quotaBytes: nil, now: 1)
            let streams = (0..<12).map { _ in TestEnvelopes.stream() }
            // The newest version of each stream still stored, and when it was stored.
            var current: [StreamID: (envelope: Envelope, at: Int64)] = [:]
            // Streams whose tombstone went: a reader that had it keeps it, while an older
            // version pushed after the drop is stored again (what the retention allows).
            var dropped: Set<StreamID> = []
            var readers = [(cursor: Cursor, seen: [StreamID: Envelope])](repeating: (.start, [:]), count: 3)
            func read(_ r: Int, limit: Int) throws -> Bool {
                let page = try s.pull(owner, after: readers[r].cursor, limit: limit, maxBytes: 1 << 20)
                for bytes in page.events {
                    let e = try Envelope.decode(bytes)
                    if readers[r].seen[e.header.stream].map({ $0.header.stamp < e.header.stamp }) ?? true { readers[r].seen[e.header.stream] = e }
                }
                readers[r].cursor = page.cursor
                return page.more
            }
            for _ in 0..<80 {
                clock += 1
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<5:
                    let batch = (0..<Int.random(in: 1...8, using: &rng)).map { _ in
                        TestEnvelopes.make(owner: owner, stream: streams[Int.random(in: 0..<streams.count, using: &rng)],
                                           millis: Int64.random(in: 0...60, using: &rng) * 100, deleted: Int.random(in: 0..<4, using: &rng) == 0)
                    }
                    _ = try s.push(owner, events: batch.map(TestEnvelopes.incoming), quotaBytes: 1 << 30, now: clock)
                    for e in batch where current[e.header.stream].map({ $0.envelope.header.stamp < e.header.stamp }) ?? true {
                        current[e.header.stream] = (e, clock)
                    }
                case 5:
                    let cutoff = clock - 10
                    let gone = current.filter { $0.value.envelope.header.deleted && $0.value.at < cutoff }.map(\.key)
                    #expect(try s.dropTombstones(storedBefore: cutoff) == gone.count, "round \(round)")
                    for stream in gone { current[stream] = nil }
                    dropped.formUnion(gone)
                default:
                    _ = try read(Int.random(in: 0..<readers.count, using: &rng), limit: Int.random(in: 1...4, using: &rng))
                }
            }
            for r in readers.indices {
                while try read(r, limit: 3) {}
                let kept = current.filter { !dropped.contains($0.key) }
                #expect(readers[r].seen.filter { kept[$0.key] != nil }.mapValues(\.encoded) == kept.mapValues(\.envelope.encoded),
                        "round \(round), reader \(r)")
            }
            let u = try s.usage(owner)!
            #expect(u.events == Int64(current.count) && u.eventBytes == Int64(current.values.map(\.envelope.encoded.count).reduce(0, +)),
                    "round \(round)")
            // Dropping goes across owners: the next round starts with none of this one's left.
            #expect(try s.dropTombstones(storedBefore: clock + 1) == current.values.filter(\.envelope.header.deleted).count)
        }
    }

    /// Pushes from many threads at once, every other one over its quota, commit together in
    /// groups: each is taken or refused as if alone (a refused one stores nothing, the others
    /// all of theirs), on every backend.
    @Test(arguments: TestBackend.allCases) func concurrentPushesOverQuotaFailAloneInTheirGroup(_ backend: TestBackend) throws {
        let s = try backend.makeStorage(in: dir)
        let owners = (0..<12).map { _ in TestEnvelopes.owner() }
        for o in owners { try s.createOwner(o, quotaBytes: nil, now: 1) }
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: owners.count) { t in
            for round in 0..<15 {
                let batch = (0..<5).map { _ in TestEnvelopes.make(owner: owners[t], stream: TestEnvelopes.stream(), millis: 1000 + Int64(round)) }
                do {
                    let outcomes = try s.push(owners[t], events: batch.map(TestEnvelopes.incoming), quotaBytes: t % 2 == 0 ? 1 << 30 : 10, now: 2)
                    if t % 2 == 1 || outcomes != Array(repeating: .stored, count: 5) { failures.withLock { $0.append("\(t): \(outcomes)") } }
                } catch {
                    guard t % 2 == 1, let refusal = error as? RelayStorageError, case .quotaExceeded = refusal else {
                        failures.withLock { $0.append("\(t): \(error)") }
                        continue
                    }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        for (t, o) in owners.enumerated() {
            #expect(try s.usage(o)!.events == (t % 2 == 0 ? 75 : 0))
            #expect(try s.pull(o, after: .start, limit: 100, maxBytes: 1 << 24).events.count == (t % 2 == 0 ? 75 : 0))
        }
    }

    @Test(arguments: TestBackend.allCases) func compactionKeepsTheNewestPerStreamAndCursorsSkipNothing(_ backend: TestBackend) throws {
        let s = try storage(backend)
        let stream = TestEnvelopes.stream()
        let v1 = TestEnvelopes.make(owner: owner, stream: stream, millis: 1000)
        let v2 = TestEnvelopes.make(owner: owner, stream: stream, millis: 2000)
        let v3 = TestEnvelopes.make(owner: owner, stream: stream, millis: 2000, counter: 1)
        let a = TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 1500)
        _ = try s.push(owner, events: [v1, a].map(TestEnvelopes.incoming), quotaBytes: 1 << 30, now: 1)
        let before = try s.pull(owner, after: .start, limit: 1, maxBytes: 1 << 20) // has v1 only
        #expect(before.events == [v1.encoded])
        #expect(try s.push(owner, events: [v3, v2].map(TestEnvelopes.incoming), quotaBytes: 1 << 30, now: 2) == [.stored, .superseded])
        #expect(try s.push(owner, events: [TestEnvelopes.incoming(v1)], quotaBytes: 1 << 30, now: 3) == [.superseded])
        let all = try s.pull(owner, after: .start, limit: 100, maxBytes: 1 << 20)
        #expect(all.events == [a.encoded, v3.encoded])
        // The cursor taken before compaction still reaches every survivor after it.
        let rest = try s.pull(owner, after: before.cursor, limit: 100, maxBytes: 1 << 20)
        #expect(rest.events == [a.encoded, v3.encoded])
        #expect(try s.usage(owner)!.events == 2)
    }

    @Test(arguments: TestBackend.allCases) func tombstonesGoAfterTheRetention(_ backend: TestBackend) throws {
        let s = try storage(backend)
        let live = TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 1000)
        let tomb = TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 1000, deleted: true)
        _ = try s.push(owner, events: [live, tomb].map(TestEnvelopes.incoming), quotaBytes: 1 << 30, now: 100)
        #expect(try s.dropTombstones(storedBefore: 100) == 0)
        #expect(try s.dropTombstones(storedBefore: 101) == 1)
        #expect(try s.pull(owner, after: .start, limit: 10, maxBytes: 1 << 20).events == [live.encoded])
        #expect(try s.usage(owner)!.events == 1 && s.usage(owner)!.eventBytes == Int64(live.encoded.count))
    }

    @Test(arguments: TestBackend.allCases) func quotaRefusesTheWholeBatch(_ backend: TestBackend) throws {
        let s = try storage(backend)
        let e = (0..<3).map { TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 1000 + Int64($0), bodySize: 100) }
        let size = Int64(e[0].encoded.count)
        _ = try s.push(owner, events: [TestEnvelopes.incoming(e[0])], quotaBytes: size * 2, now: 1)
        #expect(throws: RelayStorageError.quotaExceeded(quotaBytes: size * 2, usedBytes: size, neededBytes: size * 2)) {
            try s.push(owner, events: [e[1], e[2]].map(TestEnvelopes.incoming), quotaBytes: size * 2, now: 2)
        }
        #expect(try s.usage(owner)!.events == 1)
        #expect(try s.pull(owner, after: .start, limit: 10, maxBytes: 1 << 20).events.count == 1)
        // An override wins over the default; blobs count too.
        try s.setQuota(owner, quotaBytes: size * 2 + 10)
        #expect(throws: RelayStorageError.self) { try s.addBlob(owner, key: String(repeating: "a", count: 64), size: size + 11, quotaBytes: 0, now: 3) }
        #expect(try s.addBlob(owner, key: String(repeating: "a", count: 64), size: size, quotaBytes: 0, now: 3))
        #expect(try !s.addBlob(owner, key: String(repeating: "a", count: 64), size: size, quotaBytes: 0, now: 3))
        #expect(throws: RelayStorageError.self) { try s.push(owner, events: [TestEnvelopes.incoming(e[1])], quotaBytes: 1 << 30, now: 4) }
        // Deleting the relay copy frees it.
        #expect(try s.usage(owner)!.lastPushAt == 1)
        #expect(try s.deleteOwnerData(owner) == [String(repeating: "a", count: 64)])
        #expect(try s.usage(owner)!.events == 0)
        // Nothing in the copy was pushed: no last push until the next one.
        #expect(try s.usage(owner)!.lastPushAt == nil)
        #expect(try s.push(owner, events: [TestEnvelopes.incoming(e[1])], quotaBytes: 1 << 30, now: 5) == [.stored])
        #expect(try s.pull(owner, after: .start, limit: 10, maxBytes: 1 << 20).events == [e[1].encoded])
        #expect(try s.usage(owner)!.lastPushAt == 5)
    }

    /// Every cursor handed out stays good after a tombstone sweep and compaction, which keep the
    /// sequence; no cursor is an empty page at worst. Deleting the relay copy is the exception:
    /// every cursor handed out before is refused (`lost_data`), as after a restore, so a device
    /// still syncing starts over and fills the relay again; the numbering goes on past them.
    /// A blob goes with its share of the usage unless a device stored it or looked for it
    /// (`touching`) at or after the time given; a plain read does not count; one that is not
    /// there is absent.
    @Test(arguments: TestBackend.allCases) func blobsAreRemovedUnlessUsedLately(_ backend: TestBackend) throws {
        let s = try storage(backend)
        let key = String(repeating: "ab", count: 32), other = String(repeating: "cd", count: 32)
        #expect(try s.addBlob(owner, key: key, size: 100, quotaBytes: 1 << 30, now: 1000))
        #expect(try s.addBlob(owner, key: other, size: 7, quotaBytes: 1 << 30, now: 1000))
        #expect(try s.deleteBlob(owner, key: key, usedSince: 1000) == .inUse(lastUsed: 1000))
        #expect(try s.blobSize(owner, key: key, touching: 5000) == 100)
        #expect(try s.blobSize(owner, key: key, touching: 3000) == 100)  // never moves back
        #expect(try s.blobSize(owner, key: key) == 100)
        #expect(try s.deleteBlob(owner, key: key, usedSince: 5000) == .inUse(lastUsed: 5000))
        #expect(try s.usage(owner)!.blobs == 2)
        #expect(try s.deleteBlob(owner, key: key, usedSince: 5001) == .deleted(size: 100))
        #expect(try s.blobSize(owner, key: key) == nil)
        #expect(try s.blobSize(owner, key: key, touching: 9000) == nil)
        #expect(try s.deleteBlob(owner, key: key, usedSince: 5001) == .absent)
        let u = try s.usage(owner)!
        #expect(u.blobs == 1 && u.blobBytes == 7)
        // Stored again, it counts again.
        #expect(try s.addBlob(owner, key: key, size: 100, quotaBytes: 1 << 30, now: 9000))
        #expect(try s.usage(owner)!.blobBytes == 107)
    }

    @Test(arguments: TestBackend.allCases) func cursorsHandedOutStayGood(_ backend: TestBackend) throws {
        let s = try storage(backend)
        func pull(_ cursor: Int64) throws -> EventPage { try s.pull(owner, after: Cursor(cursor), limit: 10, maxBytes: 1 << 20) }
        let fresh = try pull(0)
        #expect(fresh.events.isEmpty && fresh.cursor == .start && !fresh.more)
        let stream = TestEnvelopes.stream()
        let v1 = TestEnvelopes.make(owner: owner, stream: stream, millis: 1000)
        let tomb = TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 1000, deleted: true)
        _ = try s.push(owner, events: [v1, tomb].map(TestEnvelopes.incoming), quotaBytes: 1 << 30, now: 10)
        #expect(try pull(0).cursor == Cursor(2))
        let caughtUp = try pull(2)
        #expect(caughtUp.events.isEmpty && caughtUp.cursor == Cursor(2) && !caughtUp.more)
        // The newest event goes (the tombstone swept), then v1 is replaced by v2.
        #expect(try s.dropTombstones(storedBefore: 11) == 1)
        #expect(try pull(2).events.isEmpty)
        let v2 = TestEnvelopes.make(owner: owner, stream: stream, millis: 2000)
        _ = try s.push(owner, events: [TestEnvelopes.incoming(v2)], quotaBytes: 1 << 30, now: 12)
        #expect(try pull(1).events == [v2.encoded] && pull(2).events == [v2.encoded])
        // Deleting the relay copy refuses every cursor handed out before (the newest was 3).
        _ = try s.deleteOwnerData(owner)
        let offset = try #require(Cursor.offsetAfterRestore(offset: 0, nextSeq: 4))
        for cursor: Int64 in [1, 2, 3] {
            #expect(throws: RelayStorageError.cursorLost(owner: owner, cursor: Cursor(cursor), why: .beforeRestore(lowest: Cursor(offset)))) {
                try pull(cursor)
            }
        }
        let empty = try pull(0)
        #expect(empty.events.isEmpty && empty.cursor == .start && !empty.more)
        // The numbering goes on past them: the next event is seq 4, cursor offset + 4.
        let v3 = TestEnvelopes.make(owner: owner, stream: stream, millis: 3000)
        _ = try s.push(owner, events: [TestEnvelopes.incoming(v3)], quotaBytes: 1 << 30, now: 13)
        #expect(try pull(0).events == [v3.encoded] && pull(0).cursor == Cursor(offset + 4))
        #expect(try pull(offset + 4).events.isEmpty)
    }

    /// A cursor beyond the newest the owner was ever given was never handed out: the storage was
    /// restored from an older backup. The pull is refused, and from then on so is every cursor
    /// handed out before, also one the restored storage's new events have caught up with (which
    /// would skip them); the numbering goes on past all of them. The same on every backend.
    @Test(arguments: TestBackend.allCases) func aCursorNeverHandedOutRefusesEveryEarlierCursor(_ backend: TestBackend) throws {
        let s = try storage(backend)
        func pull(_ cursor: Int64) throws -> EventPage { try s.pull(owner, after: Cursor(cursor), limit: 10, maxBytes: 1 << 20) }
        func push(_ millis: Int64) throws -> Envelope {
            let e = TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: millis)
            #expect(try s.push(owner, events: [TestEnvelopes.incoming(e)], quotaBytes: 1 << 30, now: millis) == [.stored])
            return e
        }
        func lost(_ cursor: Int64, _ why: CursorLoss) -> RelayStorageError { .cursorLost(owner: owner, cursor: Cursor(cursor), why: why) }

        // An owner with nothing yet: any cursor but none is ahead.
        #expect(throws: lost(1, .ahead(newest: .start))) { try pull(1) }
        var offset = try #require(Cursor.offsetAfterRestore(offset: 0, nextSeq: 1))
        #expect(throws: lost(1, .beforeRestore(lowest: Cursor(offset)))) { try pull(1) }
        #expect(try pull(0).events.isEmpty && pull(0).cursor == .start)
        // The numbering goes on past the refused cursors: seq 1 is cursor offset + 1.
        let a = try push(1000), b = try push(2000), c = try push(3000)
        let all = try pull(0)
        #expect(all.events == [a, b, c].map(\.encoded) && all.cursor == Cursor(offset + 3))
        #expect(try pull(offset + 1).events == [b, c].map(\.encoded))
        #expect(try pull(offset).events.count == 3)

        // Restored: a device read up to offset + 5, which this storage never handed out. Two new
        // events catch up with that cursor; it is refused all the same once a pull was after a
        // cursor beyond the newest.
        let d = try push(4000), e = try push(5000)
        #expect(try pull(offset + 3).events == [d, e].map(\.encoded))   // cannot tell yet
        #expect(throws: lost(offset + 9, .ahead(newest: Cursor(offset + 5)))) { try pull(offset + 9) }
        let before = offset
        offset = try #require(Cursor.offsetAfterRestore(offset: before, nextSeq: 6))
        #expect(offset > before + 5 + (1 << 31))
        for cursor in [1, before, before + 3, before + 5, offset - 1] {
            #expect(throws: lost(cursor, .beforeRestore(lowest: Cursor(offset)))) { try pull(cursor) }
        }
        // A device that starts over reads everything in the new numbering, which holds.
        let again = try pull(0)
        #expect(again.events == [a, b, c, d, e].map(\.encoded) && again.cursor == Cursor(offset + 5))
        #expect(try pull(offset + 5).events.isEmpty)
        let f = try push(6000)
        #expect(try pull(offset + 5).events == [f.encoded] && pull(offset + 5).cursor == Cursor(offset + 6))
        #expect(try pull(offset + 2).events == [c, d, e, f].map(\.encoded))

        // A cursor too far ahead for any restore to explain (made up, or another relay's): refused
        // as never handed out, and nothing changes, so one request cannot make every device of
        // the owner start over. The largest cursor there is among them.
        for bogus in [Int64.max, offset + 6 + Cursor.restoreSpan + 1] {
            #expect(throws: RelayStorageError.cursorNeverIssued(owner: owner, cursor: Cursor(bogus), newest: Cursor(offset + 6))) { try pull(bogus) }
        }
        #expect(try pull(offset + 5).events == [f.encoded])
        // The farthest a restore explains still starts the owner over, and the numbering has room.
        #expect(throws: lost(offset + 6 + Cursor.restoreSpan, .ahead(newest: Cursor(offset + 6)))) { try pull(offset + 6 + Cursor.restoreSpan) }
        #expect(try pull(0).cursor.sequence < Int64.max / 2)

        // An owner the storage does not know holds nothing, and gets no row by being asked.
        let stranger = TestEnvelopes.owner()
        #expect(try s.pull(stranger, after: .start, limit: 10, maxBytes: 1 << 20).events.isEmpty)
        #expect(throws: RelayStorageError.cursorLost(owner: stranger, cursor: Cursor(5), why: .ahead(newest: .start))) {
            try s.pull(stranger, after: Cursor(5), limit: 10, maxBytes: 1 << 20)
        }
        #expect(try s.usage(stranger) == nil)
    }

    @Test(arguments: TestBackend.allCases) func tokensAndPairingCodes(_ backend: TestBackend) throws {
        let s = try storage(backend)
        let token = AccessToken()
        try s.addToken(NewToken(id: "00000000000000aa", hash: token.hash, owner: owner, role: .owner, device: "laptop"), now: 5)
        #expect(try s.authenticate(tokenHash: token.hash, now: 6) == Authenticated(tokenID: "00000000000000aa", grants: [owner: .owner]))
        #expect(try s.tokens(of: owner).map(\.lastUsedAt) == [6])
        #expect(try s.authenticate(tokenHash: AccessToken().hash, now: 6) == nil)

        let code = PairingCode()
        try s.addPairingCode(hash: code.hash, owner: owner, expiresAt: 100, now: 10)
        let second = AccessToken()
        let new = NewToken(id: "00000000000000bb", hash: second.hash, owner: OwnerID(high: 0, low: 0), role: .owner, device: "phone")
        #expect(try s.redeemPairingCode(hash: PairingCode().hash, token: new, now: 11) == nil)
        #expect(try s.redeemPairingCode(hash: code.hash, token: new, now: 11) == owner)
        #expect(try s.redeemPairingCode(hash: code.hash, token: NewToken(id: "00000000000000cc", hash: AccessToken().hash, owner: owner, role: .owner, device: "x"), now: 12) == nil)
        #expect(try s.authenticate(tokenHash: second.hash, now: 12)?.grants == [owner: .owner])
        let expiring = PairingCode()
        try s.addPairingCode(hash: expiring.hash, owner: owner, expiresAt: 100, now: 20)
        #expect(try s.redeemPairingCode(hash: expiring.hash, token: NewToken(id: "00000000000000dd", hash: AccessToken().hash, owner: owner, role: .owner, device: "x"), now: 100) == nil)

        #expect(try s.revokeToken("00000000000000aa", owner: owner, now: 20))
        #expect(try !s.revokeToken("00000000000000aa", owner: owner, now: 21))
        #expect(try s.authenticate(tokenHash: token.hash, now: 22) == nil)
        #expect(try s.tokens(of: owner).map(\.id) == ["00000000000000bb"])
    }

    @Test func rolesCarryRights() {
        #expect(Role.owner.allows(.owner) && Role.owner.allows(.write) && Role.owner.allows(.read))
        #expect(!Role.editor.allows(.owner) && Role.editor.allows(.write) && Role.editor.allows(.read))
        #expect(!Role.viewer.allows(.owner) && !Role.viewer.allows(.write) && Role.viewer.allows(.read))
    }
}

@Suite struct RelayLongPollHubTests {
    final class Flag: @unchecked Sendable {
        let lock = NSLock()
        var count = 0
        func bump() { lock.lock(); count += 1; lock.unlock() }
        var value: Int { lock.lock(); defer { lock.unlock() }; return count }
    }

    @Test func aPushWakesItsOwnersWaitersOnly() {
        let hub = LongPollHub()
        hub.start()
        defer { hub.shutdown() }
        let a = TestEnvelopes.owner(), b = TestEnvelopes.owner()
        let woken = Flag(), other = Flag()
        let first = hub.wait(owner: a, generation: hub.generation(a), deadline: .now + .seconds(60), resume: { woken.bump() })
        let second = hub.wait(owner: b, generation: hub.generation(b), deadline: .now + .seconds(60), resume: { other.bump() })
        #expect(first && second)
        #expect(hub.waitingCount == 2)
        hub.notify(a)
        #expect(woken.value == 1 && other.value == 0 && hub.waitingCount == 1)
        hub.notify(a)
        #expect(woken.value == 1)
    }

    @Test func aStaleGenerationIsRefused() {
        let hub = LongPollHub()
        let a = TestEnvelopes.owner()
        let seen = hub.generation(a)
        hub.notify(a) // a push between the query and the registration
        let accepted = hub.wait(owner: a, generation: seen, deadline: .now + .seconds(60), resume: {})
        #expect(!accepted)
        #expect(hub.waitingCount == 0)
    }

    @Test func deadlinesResume() async throws {
        let hub = LongPollHub()
        hub.start()
        defer { hub.shutdown() }
        let a = TestEnvelopes.owner()
        let woken = Flag()
        _ = hub.wait(owner: a, generation: 0, deadline: .now + .milliseconds(50), resume: { woken.bump() })
        _ = hub.wait(owner: a, generation: 0, deadline: .now + .seconds(60), resume: { woken.bump() })
        for _ in 0..<100 where woken.value == 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(woken.value == 1 && hub.waitingCount == 1)
        hub.shutdown()
        #expect(woken.value == 2 && hub.waitingCount == 0)
    }
}
