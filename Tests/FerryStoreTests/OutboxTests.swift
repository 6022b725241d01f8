import FerryTestSupport
import Testing
@testable import FerryModel
@testable import FerryStore

/// Plays a transport's push: reads what `transport` needs (at most `limit`) and records it
/// all as stored, as the engine does after a successful push. Returns what it read.
@discardableResult
func pushAll(_ store: Store, _ transport: String, space: String = Store.privateSpace, limit: Int = 10_000) throws -> Store.PendingPage {
    let page = try store.pending(space: space, transport: transport, limit: limit)
    try record(store, transport, page, space: space)
    return page
}

/// Records `page` (read earlier with `pending`) as stored by `transport`.
func record(_ store: Store, _ transport: String, _ page: Store.PendingPage, space: String = Store.privateSpace) throws {
    try store.recordPush(space: space, transport: transport, from: page.from, through: page.through,
                         since: page.since, acked: page.items.map { ($0.rid, $0.version.hlc) })
}

@Suite struct OutboxTests {
    @Test func aLocalWriteIsQueuedAndTenEditsSendOnce() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "relay", kind: "relay")
        var last: Record?
        for i in 0..<10 { last = try store.put(entity: "note", id: "N", payload: #"{"v":\#(i)}"#) }
        let pending = try store.pending(transport: "relay").items
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
                #expect(try store.pendingCount(transport: t.name) == store.pending(transport: t.name, limit: 10_000).items.count, "\(t.name): \(context)")
            }
        }
        try check("empty")
        var records: [Record] = []
        for i in 0..<30 { records.append(try store.put(entity: "note", id: "N\(i)", payload: #"{"i":\#(i)}"#)) }
        try check("30 queued")
        #expect(try store.pendingCount(transport: "folder") == 30)
        #expect(try pushAll(store, "folder", limit: 10).items.map(\.version) == records.prefix(10).map(\.version))
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
        try pushAll(store, "folder")
        #expect(try store.pending(transport: "folder").items.isEmpty)
        #expect(try store.pending(transport: "relay").items.count == 1)
        #expect(try store.outbox().count == 1)
        #expect(try store.outbox()[0].deliveries == [.init(transport: "folder", acknowledged: r.hlc, error: nil, errorStamp: nil)])
        try pushAll(store, "relay")
        #expect(try store.outbox().isEmpty)
    }

    /// A recorded push moves the transport's cursor over the batch: one transport's push
    /// leaves the entry for the other; a version written while the push was on its way stays
    /// queued for it; with one transport its push is all there is.
    @Test func aRecordedPushMovesThatTransportsCursorOnly() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "folder", kind: "folder")
        try store.addTransport(name: "relay", kind: "relay")
        let r = try store.put(entity: "note", id: "N", payload: "{}")
        let row = try #require(pushAll(store, "folder").items.first)
        #expect(row.version == r.version)
        #expect(try store.pending(transport: "folder").items.isEmpty)
        #expect(try store.outbox()[0].deliveries.map(\.transport) == ["folder"])
        // Changed while the relay's push of the old version was on its way: the new version
        // stays queued for both.
        let relayPage = try store.pending(transport: "relay")
        let newer = try store.put(entity: "note", id: "N", payload: #"{"v":2}"#)
        try record(store, "relay", relayPage)
        #expect(try store.pending(transport: "relay").items.map(\.version) == [newer.version])
        #expect(try store.pending(transport: "folder").items.map(\.version) == [newer.version])
        let again = try #require(store.pending(transport: "relay").items.first)
        #expect(again.rid == row.rid, "a record keeps its row")
        #expect(again.outboxSeq > row.outboxSeq)
        for t in ["folder", "relay"] { try pushAll(store, t) }
        #expect(try store.outbox().isEmpty)

        // A batch read before an earlier one was recorded moves nothing (it is sent again).
        let m = try store.put(entity: "note", id: "M", payload: "{}")
        let late = try store.pending(transport: "relay", after: m.seq)
        #expect(late.items.isEmpty && late.from == m.seq)
        try store.recordPush(transport: "relay", from: m.seq, through: m.seq + 5, since: late.since, acked: [])
        #expect(try store.pending(transport: "relay").items.map(\.version) == [m.version])

        // One transport: its push is all there is.
        try store.removeTransport(name: "relay")
        let one = try store.put(entity: "note", id: "O", payload: "{}")
        #expect(try pushAll(store, "folder").items.map(\.version) == [m.version, one.version])
        #expect(try store.outbox().isEmpty)
    }

    /// A transport skips the changes it delivered itself, and its cursor moves past them
    /// without a push: at once when it had everything before them, else when its push loop
    /// reads past them (an empty batch).
    @Test func aTransportIsNotSentWhatItDeliveredAndItsCursorMovesPastIt() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "folder", kind: "folder")
        func remote(_ id: String, _ millis: Int64) -> RecordVersion {
            RecordVersion(entity: "n", id: id, hlc: Stamp(millis: millis, counter: 0, node: NodeID(9)), deleted: false, payload: "{}")
        }
        _ = try store.applyRemote([remote("a", 1), remote("b", 2)], origin: .remote(transport: "folder"))
        var page = try store.pending(transport: "folder")
        #expect(page.items.isEmpty && page.from == store.lastSeq && page.through == store.lastSeq)
        #expect(try store.pendingCount(transport: "folder") == 0)
        // A local write in between: the next remote batch leaves the cursor where it was.
        let local = try store.put(entity: "n", id: "L", payload: "{}")
        _ = try store.applyRemote([remote("c", 3)], origin: .remote(transport: "folder"))
        page = try store.pending(transport: "folder")
        #expect(page.items.map(\.version) == [local.version])
        #expect(page.through == store.lastSeq, "the read went past what came from the transport")
        try record(store, "folder", page)
        let after = try store.pending(transport: "folder")
        #expect(after.items.isEmpty && after.from == store.lastSeq && after.through == store.lastSeq)
        #expect(try store.outbox().isEmpty)
    }

    /// A transport added under the name of a removed one is sent what the removed one
    /// delivered: it may be another place altogether.
    @Test func aTransportAddedAgainIsSentWhatItsNamesakeDelivered() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "folder", kind: "folder")
        let remote = RecordVersion(entity: "n", id: "R", hlc: Stamp(millis: 1, counter: 0, node: NodeID(9)), deleted: false, payload: "{}")
        _ = try store.applyRemote([remote], origin: .remote(transport: "folder"))
        #expect(try store.pending(transport: "folder").items.isEmpty)
        try store.removeTransport(name: "folder")
        try store.addTransport(name: "folder", kind: "folder")
        #expect(try store.pending(transport: "folder").items.map(\.version) == [remote])
        try store.restartTransport(name: "folder")
        #expect(try store.pending(transport: "folder").items.map(\.version) == [remote])
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
        for t in ["folder", "relay"] { try pushAll(store, t) }
        try store.setProgress(key: "cursor:relay", value: "42")
        try store.setProgress(key: "push:relay", value: "7")
        try store.setProgress(key: "cursor:folder", value: "9")
        #expect(try store.outbox().isEmpty)

        try store.restartTransport(name: "relay")
        #expect(try store.pending(transport: "relay").items.map(\.version) == records.map(\.version))
        #expect(try store.pending(transport: "folder").items.isEmpty)
        #expect(try store.progress(key: "cursor:relay") == nil)
        #expect(try store.progress(key: "push:relay") == nil)
        #expect(try store.progress(key: "cursor:folder") == "9")
        try pushAll(store, "relay")
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
        try store.put(entity: "note", id: "N", payload: "{}")
        try pushAll(store, "relay")
        try store.setProgress(key: "cursor:relay", value: "42")

        try store.addTransport(name: "relay", kind: "relay", config: #"{"url":"http://a","token":"t2"}"#, startOver: false)
        #expect(try store.progress(key: "cursor:relay") == "42")
        #expect(try store.pending(transport: "relay").items.isEmpty)

        try store.addTransport(name: "relay", kind: "relay", config: #"{"url":"http://b"}"#, startOver: true)
        #expect(try store.progress(key: "cursor:relay") == nil)
        #expect(try store.pending(transport: "relay").items.map(\.version.id) == ["N"])
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

    /// A push recorded for a transport that is not configured counts for nothing.
    @Test func pushesOfUnconfiguredTransportsCountForNothing() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "t1", kind: "folder")
        try store.addTransport(name: "t2", kind: "relay")
        let r = try store.put(entity: "note", id: "N", payload: "{}")
        try pushAll(store, "t1")
        try store.recordPush(transport: "ghost", from: 0, through: r.seq, since: 0, acked: [(1, r.hlc)],
                             refused: [(r.version.key, r.hlc, "no")])
        #expect(try store.outbox().count == 1)
        #expect(try store.outbox()[0].deliveries.map(\.transport) == ["t1"])
        #expect(try store.pending(transport: "t2").items.count == 1)
        try pushAll(store, "t2")
        #expect(try store.outbox().isEmpty)
    }

    /// With one transport its push empties the outbox; an entry written later starts with no
    /// verdicts.
    @Test func withOneTransportItsPushAloneEmptiesTheOutbox() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "only", kind: "relay")
        let r = try store.put(entity: "note", id: "N", payload: "{}")
        #expect(try store.outbox().count == 1)
        #expect(try store.outbox()[0].deliveries.isEmpty)
        try pushAll(store, "only")
        #expect(try store.outbox().isEmpty)
        #expect(try store.pending(transport: "only").items.isEmpty)
        let next = try store.put(entity: "note", id: "N", payload: #"{"v":2}"#)
        #expect(next.seq > r.seq)
        #expect(try store.outbox().map(\.deliveries.count) == [0])
        #expect(try store.pending(transport: "only").items.map(\.version.hlc) == [next.hlc])
    }

    /// A refusal goes once the transport has a newer version, also when that version came from
    /// the transport itself (another device wrote a smaller one and pushed it there): nothing
    /// is pushed to it then, so applying the version clears the refusal.
    @Test func aRefusalGoesWhenTheTransportItselfDeliversANewerVersion() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "relay", kind: "relay")
        let r = try store.put(entity: "note", id: "N", payload: #"{"big":true}"#)
        let page = try store.pending(transport: "relay")
        try store.recordPush(transport: "relay", from: page.from, through: page.through, since: page.since, acked: [],
                             refused: [(r.version.key, r.hlc, "413: too large")])
        #expect(try store.outbox(errorsOnly: true).count == 1)
        let smaller = RecordVersion(entity: "note", id: "N", hlc: Stamp(millis: r.hlc.millis + 1000, counter: 0, node: NodeID(9)),
                                    deleted: false, payload: "{}")
        _ = try store.applyRemote([smaller], origin: .remote(transport: "relay"))
        #expect(try store.get(entity: "note", id: "N")?.version.hlc == smaller.hlc)
        #expect(try store.pending(transport: "relay").items.isEmpty)
        #expect(try store.outbox(errorsOnly: true).isEmpty, "the relay has the current version")
        #expect(try store.outbox().isEmpty)
        #expect(try store.stats().outboxErrors == 0)
    }

    /// Deletions go ahead of a backlog the transport refuses (a relay over its quota):
    /// `pendingDeletions` gives the tombstones past the cursor, `recordAhead` keeps them from
    /// being offered again, until the record changes; a read from before a start-over records
    /// nothing; the marks go once the cursor passes the records.
    @Test func deletionsTakenAheadOfTheBacklogAreNotOfferedAgain() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "relay", kind: "relay")
        for i in 0..<5 { try store.put(entity: "note", id: "N\(i)", payload: "{}") }
        try pushAll(store, "relay")
        for i in 0..<20 { try store.put(entity: "note", id: "B\(i)", payload: #"{"big":true}"#) }
        try store.delete(entity: "note", id: "N0")
        try store.delete(entity: "note", id: "N1")
        try store.delete(entity: "note", id: "B3")
        let ahead = try store.pendingDeletions(transport: "relay")
        #expect(ahead.items.map(\.version.id) == ["N0", "N1", "B3"] && ahead.items.allSatisfy(\.version.deleted))
        #expect(try store.pendingDeletions(transport: "relay", limit: 2).items.map(\.version.id) == ["N0", "N1"])
        try store.recordAhead(transport: "relay", since: ahead.since, acked: ahead.items.map { ($0.rid, $0.version.hlc) })
        #expect(try store.pendingDeletions(transport: "relay").items.isEmpty)
        let backlog = (0..<20).filter { $0 != 3 }.map { "B\($0)" }
        #expect(try store.pending(transport: "relay", limit: 10_000).items.map(\.version.id) == backlog)
        #expect(try store.pendingCount(transport: "relay") == 19)
        #expect(try store.outbox().count == 19)
        #expect(try store.stats().outbox == 19 && store.outboxCounts().pending == 19, "the status counts what the listing lists")
        // A record taken ahead that changes again is offered again.
        try store.put(entity: "note", id: "N1", payload: #"{"back":true}"#)
        #expect(try store.pending(transport: "relay", limit: 10_000).items.map(\.version.id) == backlog + ["N1"])
        // Read before the transport started over: recording it marks nothing.
        try store.delete(entity: "note", id: "N2")
        let stale = try store.pendingDeletions(transport: "relay")
        #expect(stale.items.map(\.version.id) == ["N2"])
        try store.restartTransport(name: "relay")
        try store.recordAhead(transport: "relay", since: stale.since, acked: stale.items.map { ($0.rid, $0.version.hlc) })
        #expect(try store.pendingDeletions(transport: "relay").items.map(\.version.id) == ["N0", "B3", "N2"],
                "after the start-over every tombstone is needed again, N2 too")
        // Taken ahead again, then the cursor passes them: no marks are left behind.
        let again = try store.pendingDeletions(transport: "relay")
        try store.recordAhead(transport: "relay", since: again.since, acked: again.items.map { ($0.rid, $0.version.hlc) })
        try pushAll(store, "relay")
        #expect(try store.pendingCount(transport: "relay") == 0)
        let marks = try store.read("counting marks") { db in try db.scalarInt("SELECT count(*) FROM outbox_delivery") }
        #expect(marks == 0)
    }

    /// A batch read before the transport started over (its host lost its data while the push
    /// was on its way) moves nothing when recorded, even one read from cursor 0: the records
    /// are sent again.
    @Test func aPushReadBeforeAStartOverDoesNotMoveTheNewCursor() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "relay", kind: "relay")
        for i in 0..<3 { try store.put(entity: "note", id: "N\(i)", payload: "{}") }
        let page = try store.pending(transport: "relay")
        #expect(page.from == 0 && page.items.count == 3)
        // The pull loop finds the host lost its data while the push is on its way.
        try store.restartTransport(name: "relay")
        try record(store, "relay", page)
        #expect(try store.pending(transport: "relay").items.count == 3, "the host lost them: they must be sent again")
    }

    @Test func anAckOfAnOlderVersionKeepsTheNewerQueued() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "relay", kind: "relay")
        let v1 = try store.put(entity: "note", id: "N", payload: #"{"v":1}"#)
        let first = try store.pending(transport: "relay")
        #expect(first.items.map(\.version.hlc) == [v1.hlc])
        let v2 = try store.put(entity: "note", id: "N", payload: #"{"v":2}"#)
        try record(store, "relay", first)
        let pending = try store.pending(transport: "relay").items
        #expect(pending.map(\.version.hlc) == [v2.hlc])
        try pushAll(store, "relay")
        #expect(try store.outbox().isEmpty)
    }

    @Test func aRejectionKeepsTheErrorAndStaysVisible() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "relay", kind: "relay")
        let r = try store.put(entity: "note", id: "N", payload: "{}")
        try store.reject(transport: "relay", key: r.version.key, hlc: r.hlc, error: "413: quota exceeded")
        #expect(try store.pending(transport: "relay").items.isEmpty)
        #expect(try store.pendingCount(transport: "relay") == 0)
        let entry = try #require(try store.outbox().first)
        #expect(entry.deliveries.first?.error == "413: quota exceeded")
        #expect(try store.stats().outboxErrors == 1)
        // A new version is offered again.
        let r2 = try store.put(entity: "note", id: "N", payload: #"{"smaller":true}"#)
        #expect(try store.pending(transport: "relay").items.map(\.version.hlc) == [r2.hlc])
        #expect(try store.outbox().first?.deliveries.first?.error == "413: quota exceeded", "visible until a later version is taken")
        try pushAll(store, "relay")
        #expect(try store.outbox().isEmpty)
        #expect(try store.stats().outboxErrors == 0)
    }

    @Test func addingATransportQueuesEveryRecordAndRemovingOneDropsItsProgress() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "a", kind: "folder")
        var records: [Record] = []
        for i in 0..<5 { records.append(try store.put(entity: "n", id: "\(i)", payload: "{}")) }
        #expect(try pushAll(store, "a").items.map(\.version) == records.map(\.version))
        #expect(try store.outbox().isEmpty)
        try store.setProgress(key: "push:a", value: "5")
        try store.setProgress(key: "cursor:a", value: "abc")

        try store.addTransport(name: "b", kind: "relay")
        #expect(try store.pending(transport: "b").items.count == 5)
        #expect(try store.pending(transport: "a").items.isEmpty)
        try store.setProgress(key: "cursor:b", value: "xyz")

        // Removing b: its entries are no longer needed by anyone, so they are pruned.
        try store.removeTransport(name: "b")
        #expect(try store.outbox().isEmpty)
        #expect(try store.progress(key: "cursor:b") == nil)
        #expect(try store.progress(key: "cursor:a") == "abc")
        #expect(try store.transports().map(\.name) == ["a"])

        // Re-adding queues everything again.
        try store.addTransport(name: "b", kind: "relay")
        #expect(try store.pending(transport: "b").items.count == 5)
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
        #expect(try pushAll(store, "relay").items.map(\.version) == [remote])
        let newer = RecordVersion(entity: "n", id: "R", hlc: Stamp(millis: 2, counter: 0, node: NodeID(9)), deleted: false, payload: #"{"v":2}"#)
        _ = try store.applyRemote([newer], origin: .remote(transport: "folder"))
        #expect(try store.pending(transport: "folder").items.isEmpty)
        #expect(try store.pending(transport: "relay").items.map(\.version.hlc) == [newer.hlc])
    }

    /// The status line's counts: per space, the changes after its slowest transport's cursor;
    /// every change of a space with no transport.
    @Test func outboxCountsFollowTheSlowestCursorOfEachSpace() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.createSpace(name: "team")
        for i in 0..<3 { try store.put(entity: "n", id: "p\(i)", payload: "{}") }
        #expect(try store.outboxCounts() == OutboxCounts(pending: 0, withoutTransport: 3))
        try store.addTransport(space: "team", name: "t1", kind: "folder")
        try store.addTransport(space: "team", name: "t2", kind: "relay")
        for i in 0..<2 { try store.put(space: "team", entity: "n", id: "t\(i)", payload: "{}") }
        #expect(try store.outboxCounts() == OutboxCounts(pending: 2, withoutTransport: 3))
        try pushAll(store, "t1", space: "team")
        #expect(try store.outboxCounts() == OutboxCounts(pending: 2, withoutTransport: 3), "t2 has none of them yet")
        try pushAll(store, "t2", space: "team")
        #expect(try store.outboxCounts() == OutboxCounts(pending: 0, withoutTransport: 3))
        #expect(try store.stats().outbox == 3)
    }

    /// Counting stops one past the limit, summed over the spaces: a status line costs the same
    /// whatever the size of the store or the backlog. `stats()` still counts everything.
    @Test func outboxCountsStopOnePastTheirLimit() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        for i in 0..<7 { try store.put(entity: "n", id: "p\(i)", payload: "{}") }
        for name in ["team", "club"] {
            try store.createSpace(name: name)
            try store.addTransport(space: name, name: "\(name)-folder", kind: "folder")
            for i in 0..<3 { try store.put(space: name, entity: "n", id: "\(name)\(i)", payload: "{}") }
        }
        #expect(try store.outboxCounts() == OutboxCounts(pending: 6, withoutTransport: 7))
        #expect(try store.outboxCounts(limit: 7) == OutboxCounts(pending: 6, withoutTransport: 7, limit: 7))
        #expect(try store.outboxCounts(limit: 6) == OutboxCounts(pending: 6, withoutTransport: 7, limit: 6))
        #expect(try store.outboxCounts(limit: 4) == OutboxCounts(pending: 5, withoutTransport: 5, limit: 4))
        #expect(try store.outboxCounts(limit: 2) == OutboxCounts(pending: 3, withoutTransport: 3, limit: 2))
        #expect(try store.outboxCounts(limit: 0) == OutboxCounts(pending: 1, withoutTransport: 1, limit: 0))
        try pushAll(store, "team-folder", space: "team")
        #expect(try store.outboxCounts(limit: 2) == OutboxCounts(pending: 3, withoutTransport: 3, limit: 2))
        #expect(try store.outboxCounts(limit: 3) == OutboxCounts(pending: 3, withoutTransport: 4, limit: 3))
        #expect(try store.stats().outbox == 10)
    }

    @Test func withoutTransportsEntriesWaitForTheFirstOne() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.put(entity: "n", id: "1", payload: "{}")
        #expect(try store.outbox().count == 1)
        try store.addTransport(name: "first", kind: "folder")
        #expect(try store.pending(transport: "first").items.count == 1)
    }

    @Test func pendingPagesInOutboxOrder() throws {
        let dir = TempDir()
        let store = try makeStore(dir)
        try store.addTransport(name: "t", kind: "folder")
        for i in 0..<10 { try store.put(entity: "n", id: "\(i)", payload: "{}") }
        let first = try store.pending(transport: "t", limit: 4)
        let second = try store.pending(transport: "t", after: first.through, limit: 4)
        let third = try store.pending(transport: "t", after: second.through, limit: 4)
        #expect((first.items + second.items + third.items).map(\.version.id) == (0..<10).map { "\($0)" })
        #expect(first.through == first.items.last?.outboxSeq && third.through == store.lastSeq)
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
