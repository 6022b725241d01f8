import FerryRelay
import FerrySync
import FerryTestSupport
import Foundation
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
        // Deleting the relay copy frees it; sequence numbers keep growing.
        let cursor = try s.pull(owner, after: .start, limit: 10, maxBytes: 1 << 20).cursor
        #expect(try s.deleteOwnerData(owner) == [String(repeating: "a", count: 64)])
        #expect(try s.push(owner, events: [TestEnvelopes.incoming(e[1])], quotaBytes: 1 << 30, now: 5) == [.stored])
        #expect(try s.pull(owner, after: cursor, limit: 10, maxBytes: 1 << 20).events == [e[1].encoded])
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
