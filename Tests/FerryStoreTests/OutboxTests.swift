import FerryTestSupport
import Testing
@testable import FerryModel
@testable import FerryStore

@Suite struct OutboxTests {
    @Test func aLocalWriteIsQueuedAndTenEditsSendOnce() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "relay", kind: "relay")
        var last: Record?
        for i in 0..<10 { last = try store.put(entity: "note", id: "N", payload: #"{"v":\#(i)}"#) }
        let pending = try store.pending(transport: "relay")
        #expect(pending.count == 1)
        #expect(pending[0].version == last!.version)   // built from the current version
        #expect(try store.outbox().count == 1)
    }

    /// `pendingCount` counts what `pending` gives, through queueing, acknowledgements, a
    /// rejection and a change after it, and a transport added later.
    @Test func pendingCountCountsWhatPendingGives() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "folder", kind: "folder")
        func check(_ context: String) throws {
            for t in try store.transports() {
                #expect(try store.pendingCount(transport: t.name) == store.pending(transport: t.name, limit: 10_000).count, "\(t.name): \(context)")
            }
        }
        try check("empty")
        var records: [Record] = []
        for i in 0..<30 { records.append(try store.put(entity: "note", id: "N\(i)", payload: #"{"i":\#(i)}"#)) }
        try check("30 queued")
        #expect(try store.pendingCount(transport: "folder") == 30)
        try store.acknowledge(transport: "folder", records.prefix(10).map { ($0.version.key, $0.hlc) })
        try store.reject(space: Store.privateSpace, transport: "folder", key: records[10].version.key, hlc: records[10].hlc, error: "no")
        try check("10 acknowledged, 1 refused")
        #expect(try store.pendingCount(transport: "folder") == 19)
        _ = try store.put(entity: "note", id: "N10", payload: #"{"i":"again"}"#)
        try check("the refused one changed")
        #expect(try store.pendingCount(transport: "folder") == 20)
        try store.addTransport(name: "relay", kind: "relay")
        try check("a second transport")
        #expect(try store.pendingCount(transport: "relay") == 30)
    }

    @Test func prunedOnlyWhenEveryTransportAcknowledged() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "folder", kind: "folder")
        try store.addTransport(name: "relay", kind: "relay")
        let r = try store.put(entity: "note", id: "N", payload: "{}")
        try store.acknowledge(transport: "folder", [(r.version.key, r.hlc)])
        #expect(try store.pending(transport: "folder").isEmpty)
        #expect(try store.pending(transport: "relay").count == 1)
        #expect(try store.outbox().count == 1)
        #expect(try store.outbox()[0].deliveries.map(\.transport) == ["folder"])
        try store.acknowledge(transport: "relay", [(r.version.key, r.hlc)])
        #expect(try store.outbox().isEmpty)
    }

    /// Acknowledging by the rows `pending` gave does what acknowledging by key does: one
    /// transport's ack waits for the other's; an ack of a version older than the one queued
    /// since keeps the entry; with one transport an ack removes the entry at once.
    @Test func acknowledgingByRowsAsByKey() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "folder", kind: "folder")
        try store.addTransport(name: "relay", kind: "relay")
        let r = try store.put(entity: "note", id: "N", payload: "{}")
        let row = try #require(store.pending(transport: "folder").first)
        #expect(row.version == r.version)
        try store.acknowledge(transport: "folder", rows: [(row.rid, row.version.hlc)])
        #expect(try store.pending(transport: "folder").isEmpty)
        #expect(try store.outbox()[0].deliveries.map(\.transport) == ["folder"])
        // Changed before the relay's ack of the old version: the new version stays queued.
        let newer = try store.put(entity: "note", id: "N", payload: #"{"v":2}"#)
        try store.acknowledge(transport: "relay", rows: [(row.rid, row.version.hlc)])
        #expect(try store.pending(transport: "relay").map(\.version) == [newer.version])
        #expect(try store.pending(transport: "folder").map(\.version) == [newer.version])
        let again = try #require(store.pending(transport: "relay").first)
        #expect(again.rid == row.rid, "a record keeps its row")
        for t in ["folder", "relay"] { try store.acknowledge(transport: t, rows: [(again.rid, again.version.hlc)]) }
        #expect(try store.outbox().isEmpty)

        // One transport: its ack is all there is.
        try store.removeTransport(name: "relay")
        let one = try store.put(entity: "note", id: "M", payload: "{}")
        let oneRow = try #require(store.pending(transport: "folder").first)
        #expect(oneRow.version == one.version)
        try store.acknowledge(transport: "folder", rows: [(oneRow.rid, oneRow.version.hlc)])
        #expect(try store.outbox().isEmpty)
    }

    /// A transport whose host lost its data starts over: its cursor and progress go and every
    /// record is queued for it again; the other transport, which has them all, is not sent
    /// them again.
    @Test func aRestartedTransportGetsEveryRecordAgainAndTheOtherNone() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "folder", kind: "folder")
        try store.addTransport(name: "relay", kind: "relay")
        var records: [Record] = []
        for i in 0..<3 { records.append(try store.put(entity: "note", id: "N\(i)", payload: "{}")) }
        for t in ["folder", "relay"] { try store.acknowledge(transport: t, records.map { ($0.version.key, $0.hlc) }) }
        try store.setProgress(key: "cursor:relay", value: "42")
        try store.setProgress(key: "push:relay", value: "7")
        try store.setProgress(key: "cursor:folder", value: "9")
        #expect(try store.outbox().isEmpty)

        try store.restartTransport(name: "relay")
        #expect(try store.pending(transport: "relay").map(\.version.id).sorted() == ["N0", "N1", "N2"])
        #expect(try store.pending(transport: "folder").isEmpty)
        #expect(try store.progress(key: "cursor:relay") == nil)
        #expect(try store.progress(key: "push:relay") == nil)
        #expect(try store.progress(key: "cursor:folder") == "9")
        try store.acknowledge(transport: "relay", records.map { ($0.version.key, $0.hlc) })
        #expect(try store.outbox().isEmpty)
        try store.restartTransport(name: "gone")   // no such transport: nothing happens
        #expect(try store.outbox().isEmpty)
    }

    /// Adding a transport again under its name keeps its progress when it is the same place
    /// (new credentials) and starts it over when it points somewhere else.
    @Test func addingAnExistingNameStartsOverOnlyWhenAsked() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "relay", kind: "relay", config: #"{"url":"http://a"}"#)
        let r = try store.put(entity: "note", id: "N", payload: "{}")
        try store.acknowledge(transport: "relay", [(r.version.key, r.hlc)])
        try store.setProgress(key: "cursor:relay", value: "42")

        try store.addTransport(name: "relay", kind: "relay", config: #"{"url":"http://a","token":"t2"}"#, startOver: false)
        #expect(try store.progress(key: "cursor:relay") == "42")
        #expect(try store.pending(transport: "relay").isEmpty)

        try store.addTransport(name: "relay", kind: "relay", config: #"{"url":"http://b"}"#, startOver: true)
        #expect(try store.progress(key: "cursor:relay") == nil)
        #expect(try store.pending(transport: "relay").map(\.version.id) == ["N"])
    }

    /// Entries with errors are found however far back in the outbox they are: `limit` counts
    /// them, not every entry.
    @Test func errorsOnlyCountsEntriesWithErrorsAgainstTheLimit() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "relay", kind: "relay")
        for i in 0..<20 { _ = try store.put(entity: "note", id: "N\(i)", payload: "{}") }
        let late = try store.put(entity: "note", id: "late", payload: "{}")
        try store.reject(transport: "relay", key: late.version.key, hlc: late.hlc, error: "too large for the host")
        #expect(try store.outbox(limit: 5).count == 5)
        let errors = try store.outbox(errorsOnly: true, limit: 5)
        #expect(errors.map(\.id) == ["late"])
        #expect(errors.first?.deliveries.first?.error == "too large for the host")
    }

    @Test func acknowledgementsOfUnconfiguredTransportsDoNotPrune() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "t1", kind: "folder")
        try store.addTransport(name: "t2", kind: "relay")
        let r = try store.put(entity: "note", id: "N", payload: "{}")
        try store.acknowledge(transport: "t1", [(r.version.key, r.hlc)])
        try store.acknowledge(transport: "ghost", [(r.version.key, r.hlc)])
        #expect(try store.outbox().count == 1)
        #expect(try store.pending(transport: "t2").count == 1)
        try store.acknowledge(transport: "t2", [(r.version.key, r.hlc)])
        #expect(try store.outbox().isEmpty)
    }

    /// With one transport an acknowledgement removes the entry at once; one from a transport
    /// that is not configured still counts for nothing, and an earlier refusal goes with it.
    @Test func withOneTransportItsAcknowledgementAloneRemovesTheEntry() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "only", kind: "relay")
        let r = try store.put(entity: "note", id: "N", payload: "{}")
        try store.acknowledge(transport: "ghost", [(r.version.key, r.hlc)])
        #expect(try store.outbox().count == 1)
        try store.reject(transport: "only", key: r.version.key, hlc: r.hlc, error: "too big")
        #expect(try store.outbox()[0].deliveries.map(\.transport) == ["ghost", "only"])
        try store.acknowledge(transport: "only", [(r.version.key, r.hlc)])
        #expect(try store.outbox().isEmpty)
        #expect(try store.pending(transport: "only").isEmpty)
        // Nothing is left of it: a later version is queued afresh, with no old verdicts.
        let next = try store.put(entity: "note", id: "N", payload: #"{"v":2}"#)
        #expect(try store.outbox().map(\.deliveries.count) == [0])
        #expect(try store.pending(transport: "only").map(\.version.hlc) == [next.hlc])
    }

    @Test func anAckOfAnOlderVersionKeepsTheNewerQueued() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "relay", kind: "relay")
        let v1 = try store.put(entity: "note", id: "N", payload: #"{"v":1}"#)
        let v2 = try store.put(entity: "note", id: "N", payload: #"{"v":2}"#)
        try store.acknowledge(transport: "relay", [(v1.version.key, v1.hlc)])
        let pending = try store.pending(transport: "relay")
        #expect(pending.map(\.version.hlc) == [v2.hlc])
        try store.acknowledge(transport: "relay", [(v2.version.key, v2.hlc)])
        #expect(try store.outbox().isEmpty)
    }

    @Test func aRejectionKeepsTheErrorAndStaysVisible() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "relay", kind: "relay")
        let r = try store.put(entity: "note", id: "N", payload: "{}")
        try store.reject(transport: "relay", key: r.version.key, hlc: r.hlc, error: "413: quota exceeded")
        #expect(try store.pending(transport: "relay").isEmpty)
        let entry = try #require(try store.outbox().first)
        #expect(entry.deliveries.first?.error == "413: quota exceeded")
        #expect(try store.stats().outboxErrors == 1)
        // A new version is offered again.
        let r2 = try store.put(entity: "note", id: "N", payload: #"{"smaller":true}"#)
        #expect(try store.pending(transport: "relay").map(\.version.hlc) == [r2.hlc])
        try store.acknowledge(transport: "relay", [(r2.version.key, r2.hlc)])
        #expect(try store.outbox().isEmpty)
    }

    @Test func addingATransportQueuesEveryRecordAndRemovingOneDropsItsProgress() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "a", kind: "folder")
        var records: [Record] = []
        for i in 0..<5 { records.append(try store.put(entity: "n", id: "\(i)", payload: "{}")) }
        try store.acknowledge(transport: "a", records.map { ($0.version.key, $0.hlc) })
        #expect(try store.outbox().isEmpty)
        try store.setProgress(key: "push:a", value: "5")
        try store.setProgress(key: "cursor:a", value: "abc")

        try store.addTransport(name: "b", kind: "relay")
        #expect(try store.pending(transport: "b").count == 5)
        #expect(try store.pending(transport: "a").isEmpty)
        try store.setProgress(key: "cursor:b", value: "xyz")

        // Removing b: its entries are no longer needed by anyone, so they are pruned.
        try store.removeTransport(name: "b")
        #expect(try store.outbox().isEmpty)
        #expect(try store.progress(key: "cursor:b") == nil)
        #expect(try store.progress(key: "cursor:a") == "abc")
        #expect(try store.transports().map(\.name) == ["a"])

        // Re-adding queues everything again.
        try store.addTransport(name: "b", kind: "relay")
        #expect(try store.pending(transport: "b").count == 5)
    }

    @Test func remoteChangesAreForwardedToTheOtherTransportsOnly() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        let remote = RecordVersion(entity: "n", id: "R", hlc: Stamp(millis: 1, counter: 0, node: NodeID(9)), deleted: false, payload: "{}")
        // With only the transport it came from, nothing needs sending.
        try store.addTransport(name: "folder", kind: "folder")
        _ = try store.applyRemote([remote], origin: .remote(transport: "folder"))
        #expect(try store.outbox().isEmpty)
        // With a second transport, it is forwarded there and counted as delivered to its source.
        try store.addTransport(name: "relay", kind: "relay")
        try store.acknowledge(transport: "relay", [(remote.key, remote.hlc)])
        let newer = RecordVersion(entity: "n", id: "R", hlc: Stamp(millis: 2, counter: 0, node: NodeID(9)), deleted: false, payload: #"{"v":2}"#)
        _ = try store.applyRemote([newer], origin: .remote(transport: "folder"))
        #expect(try store.pending(transport: "folder").isEmpty)
        #expect(try store.pending(transport: "relay").map(\.version.hlc) == [newer.hlc])
    }

    @Test func withoutTransportsEntriesWaitForTheFirstOne() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.put(entity: "n", id: "1", payload: "{}")
        #expect(try store.outbox().count == 1)
        try store.addTransport(name: "first", kind: "folder")
        #expect(try store.pending(transport: "first").count == 1)
    }

    @Test func pendingPagesInOutboxOrder() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "t", kind: "folder")
        for i in 0..<10 { try store.put(entity: "n", id: "\(i)", payload: "{}") }
        let first = try store.pending(transport: "t", limit: 4)
        let second = try store.pending(transport: "t", after: first.last!.outboxSeq, limit: 4)
        let third = try store.pending(transport: "t", after: second.last!.outboxSeq, limit: 4)
        #expect((first + second + third).map(\.version.id) == (0..<10).map { "\($0)" })
    }

    @Test func progressIsPerSpaceAndTransport() throws {
        let dir = TempDir()
        do {
            let store = try makeStore(dir)
            try store.createSpace(name: "team")
            try store.addTransport(name: "relay", kind: "relay")
            try store.addTransport(space: "team", name: "relay", kind: "relay")
            try store.setProgress(key: "cursor:relay", value: "p")
            try store.setProgress(space: "team", key: "cursor:relay", value: "t")
            // A transport's own keys are kept only while it exists (a loop finishing after its
            // transport was removed saves nothing).
            try store.setProgress(key: "cursor:gone", value: "x")
            try store.setProgress(key: "other", value: "kept")
        }
        let store = try makeStore(dir)
        #expect(try store.progress(key: "cursor:relay") == "p")
        #expect(try store.progress(space: "team", key: "cursor:relay") == "t")
        #expect(try store.progress(key: "cursor:gone") == nil)
        #expect(try store.progress(key: "other") == "kept")
    }
}
