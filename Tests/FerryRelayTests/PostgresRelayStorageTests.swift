import FerryPostgres
import FerryRelay
import FerrySync
import FerryTestSupport
import Foundation
import Testing

/// What only the PostgreSQL backend has: connecting, migrating under concurrency, several
/// storages (relay processes) on one database, blobs in the database, and the wake listener.
@Suite struct PostgresRelayStorageTests {
    let owner = TestEnvelopes.owner()

    /// Arrays go to the server in its binary form and arrive as sent: empty, one element,
    /// several, and an empty bytea among them.
    @Test func binaryArrayParametersArriveAsSent() throws {
        let db = try PostgresConnection(conninfo: try PostgresCluster.shared().createDatabase())
        for values in [[Int64](), [7], [-1, 0, Int64.max, Int64.min]] {
            let r = try db.execute("SELECT coalesce(array_length($1::bigint[], 1), 0)::bigint, coalesce(array_to_string($1::bigint[], ','), '')",
                                   [.int8Array(values)])
            #expect(r.int64(0, 0) == Int64(values.count))
            #expect(r.text(0, 1) == values.map(String.init).joined(separator: ","))
        }
        let bools = try db.execute("SELECT array_to_string($1::boolean[], ',')", [.boolArray([true, false, true])])
        #expect(bools.text(0, 0) == "t,f,t")
        for values in [[[UInt8]](), [[1, 2, 255]], [[], [0], Array(0...255)]] {
            let r = try db.execute("SELECT i, v FROM unnest($1::bytea[]) WITH ORDINALITY AS t(v, i) ORDER BY i", [.byteaArray(values)])
            #expect(r.count == values.count)
            for row in 0..<r.count { #expect(r.bytes(row, 1) == values[row]) }
        }
    }

    @Test func aRefusedConnectionNamesTheServerButNotThePassword() throws {
        do {
            _ = try PostgresRelayStorage(conninfo: "host=127.0.0.1 port=1 dbname=ferry user=ferry password=hunter2 connect_timeout=2", poolSize: 1)
            Issue.record("connected to port 1")
        } catch {
            #expect(error.description.contains("127.0.0.1:1/ferry as ferry") && !error.description.contains("hunter2"))
        }
    }

    /// /healthz says the process serves; /readyz that its storage answers too: 503 while the
    /// database is down, 200 again once it is back. Requests that need the database are
    /// answered 503 with Retry-After meanwhile (not 500: nothing is wrong with them), and the
    /// log says so once, not once per request.
    @Test func readyzFollowsTheDatabaseAndHealthzDoesNot() throws {
        let cluster = try PostgresCluster()
        let relay = try RelayHarness(backend: .postgresql, conninfo: try cluster.createDatabase())
        try relay.start()
        let owner = ID128(high: 0xd0, low: 0x3).description
        let token = try relay.createOwner(owner)
        #expect(try relay.call("GET", "/readyz").status == 200)
        #expect(try relay.call("GET", "/healthz").status == 200)
        cluster.stop()
        let down = try relay.call("GET", "/readyz")
        #expect(down.status == 503 && down.json["error"] as? String == "unavailable", "\(down.status) \(down.text)")
        #expect((down.json["message"] as? String ?? "").contains("storage"), "\(down.text)")
        #expect(try relay.call("GET", "/healthz").status == 200)
        #expect(relay.log.contains("not ready: the storage does not answer"))
        for _ in 0..<3 {
            let pull = try relay.call("GET", "/v1/owners/\(owner)/events", token: token)
            #expect(pull.status == 503 && pull.json["error"] as? String == "unavailable" && pull.headers["retry-after"] == "5",
                    "\(pull.status) \(pull.headers) \(pull.text)")
        }
        #expect(relay.log.components(separatedBy: "storage cannot be reached").count == 2, "\(relay.log)")
    }

    /// A database that stalls (its server processes stopped: connections stay open and nothing
    /// answers, as when a network drops packets) fails requests within the configured timeout,
    /// as unreachable (503 with Retry-After), instead of holding them for as long as it lasts; the
    /// relay keeps serving what needs no database, and works again once the database answers.
    @Test func aStalledDatabaseFailsRequestsInTimeAndTheRelayRecovers() throws {
        let cluster = try PostgresCluster()
        let relay = try RelayHarness(backend: .postgresql, conninfo: try cluster.createDatabase(),
                                     extraConfig: "\n[PostgreSQL]\nTimeoutSeconds=2\n")
        try relay.start()
        let owner = ID128(high: 0xd0, low: 0x4).description
        let token = try relay.createOwner(owner)
        #expect(try relay.call("GET", "/v1/owners/\(owner)/events", token: token).status == 200)
        try cluster.freeze(true)
        defer { try? cluster.freeze(false) }
        for _ in 0..<2 {
            let started = Date()
            let pull = try relay.call("GET", "/v1/owners/\(owner)/events", token: token)
            let waited = Date().timeIntervalSince(started)
            #expect(pull.status == 503 && pull.json["error"] as? String == "unavailable" && pull.headers["retry-after"] == "5",
                    "\(pull.status) \(pull.headers) \(pull.text)")
            #expect(waited < 20, "answered after \(waited) s")
        }
        #expect(try relay.call("GET", "/healthz").status == 200)
        try cluster.freeze(false)
        // Each pooled session that timed out is reconnected at its next use.
        let envelopes = (0..<3).map { TestEnvelopes.make(owner: ID128(hex: owner)!, stream: TestEnvelopes.stream(), millis: 1000 + Int64($0)) }
        let batch = Array(("{\"events\":[" + envelopes.map { "\"\(Base64.encode($0.encoded))\"" }.joined(separator: ",") + "]}").utf8)
        var pushed = 0
        let deadline = Date().addingTimeInterval(30)
        while pushed != 200 && Date() < deadline {
            pushed = try relay.call("POST", "/v1/owners/\(owner)/events", token: token, body: batch).status
            if pushed != 200 { usleep(100_000) }
        }
        #expect(pushed == 200)
        let after = try relay.call("GET", "/v1/owners/\(owner)/events", token: token)
        #expect(after.status == 200 && (after.json["events"] as? [Any])?.count == 3, "\(after.status) \(after.text)")
    }

    /// Version 2 gave events a BIGSERIAL id as well; from version 3 they are keyed by (owner,
    /// seq). A version-2 database opened by this build serves the same events after the same
    /// cursors, and a push that replaces stored versions removes them by seq.
    @Test func version2EventsAreKeyedByOwnerAndSeqWithNothingLost() throws {
        let conninfo = try PostgresCluster.shared().createDatabase()
        let database = String(conninfo.split(separator: " ").first { $0.hasPrefix("dbname=") }!.dropFirst(7))
        let streams = (0..<5).map { _ in TestEnvelopes.stream() }
        func version(_ k: Int, _ millis: Int64) -> IncomingEvent {
            TestEnvelopes.incoming(TestEnvelopes.make(owner: owner, stream: streams[k], millis: millis))
        }
        let first = (0..<5).map { version($0, Int64(1 + $0)) }
        do {
            let storage = try PostgresRelayStorage(conninfo: conninfo, poolSize: 1)
            try storage.createOwner(owner, quotaBytes: nil, now: 1)
            #expect(try storage.push(owner, events: first, quotaBytes: 1 << 40, now: 2).allSatisfy { $0 == .stored })
        }
        // As version 2 left it: an id for each event besides (owner, seq).
        _ = try PostgresCluster.shared().sql("""
            ALTER TABLE events DROP CONSTRAINT events_pkey, ADD COLUMN id BIGSERIAL PRIMARY KEY,
                ADD CONSTRAINT events_owner_seq_key UNIQUE (owner, seq);
            ALTER TABLE blobs DROP COLUMN used_at;
            DELETE FROM relay_schema; INSERT INTO relay_schema (version) VALUES (2);
            """, database: database)
        let storage = try PostgresRelayStorage(conninfo: conninfo, poolSize: 1)
        #expect(try PostgresCluster.shared().sql("SELECT count(*) FROM information_schema.columns WHERE table_name = 'events' AND column_name = 'id'",
                                                 database: database).trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        let all = try storage.pull(owner, after: .start, limit: 100, maxBytes: 1 << 20)
        #expect(all.events == first.map(\.bytes) && !all.more)
        // Newer versions of two streams replace theirs; the others stay, in their order.
        let newer = [version(1, 10), version(3, 11)]
        #expect(try storage.push(owner, events: newer, quotaBytes: 1 << 40, now: 3) == [.stored, .stored])
        #expect(try storage.pull(owner, after: all.cursor, limit: 100, maxBytes: 1 << 20).events == newer.map(\.bytes))
        let now = try storage.pull(owner, after: .start, limit: 100, maxBytes: 1 << 20).events
        #expect(now == [first[0], first[2], first[4], newer[0], newer[1]].map(\.bytes))
    }

    @Test func relaysStartingAtOnceMigrateOnce() throws {
        let conninfo = try PostgresCluster.shared().createDatabase()
        let failures = Counter()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            if (try? PostgresRelayStorage(conninfo: conninfo, poolSize: 1)) == nil { failures.add() }
        }
        #expect(failures.value == 0)
        let again = try PostgresRelayStorage(conninfo: conninfo, poolSize: 1)
        try again.createOwner(owner, quotaBytes: nil, now: 1)
        let database = String(conninfo.split(separator: " ").first { $0.hasPrefix("dbname=") }!.dropFirst(7))
        #expect(try PostgresCluster.shared().sql("SELECT string_agg(version::text, ',') FROM relay_schema", database: database)
            .trimmingCharacters(in: .whitespacesAndNewlines) == "4")
    }

    /// libpq's multi-line messages become one line, so each error is one log line.
    @Test func libpqMessagesAreOneLine() {
        let error = PostgresError(call: "connecting to 127.0.0.1:1/ferry", message: "connection to server at \"127.0.0.1\", port 1 failed: "
            + "Connection refused\n\tIs the server running on that host and accepting TCP/IP connections?\n")
        #expect(!error.description.contains("\n") && !error.description.contains("\t"))
        #expect(error.message.hasSuffix("failed: Connection refused; Is the server running on that host and accepting TCP/IP connections?"))
    }

    /// Sessions the server dropped while they sat in the pool (PostgreSQL restarted, or an
    /// operator's pg_terminate_backend) cost no failed request: the first use of each finds out
    /// and runs again on a fresh session. Before, every pooled session answered one 500.
    @Test func sessionsDroppedWhileIdleAreReplacedWithoutAFailure() throws {
        let conninfo = try PostgresCluster.shared().createDatabase()
        let database = String(conninfo.split(separator: " ").first { $0.hasPrefix("dbname=") }!.dropFirst(7))
        let storage = try PostgresRelayStorage(conninfo: conninfo, poolSize: 3)
        try storage.createOwner(owner, quotaBytes: nil, now: 1)
        let first = TestEnvelopes.incoming(TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 1))
        #expect(try storage.push(owner, events: [first], quotaBytes: 1 << 30, now: 2) == [.stored])
        let ended = try PostgresCluster.shared().sql(
            "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(database)' AND pid <> pg_backend_pid()) t",
            database: database).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(Int(ended) ?? 0 >= 3, "\(ended)")
        for i in 0..<6 {
            let page = try storage.pull(owner, after: .start, limit: 10, maxBytes: 1 << 20)
            #expect(page.events == [first.bytes], "pull \(i)")
        }
        let second = TestEnvelopes.incoming(TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 3))
        #expect(try storage.push(owner, events: [second], quotaBytes: 1 << 30, now: 4) == [.stored])
    }

    /// `check-config` on PostgreSQL reads and creates nothing: an empty database is reported
    /// as such and stays empty; a migrated one is current. A database whose schema a newer
    /// ferry-relay wrote fails the check, and a relay refuses to open it, leaving it as it is.
    @Test func checkReadsTheSchemaVersionAndANewerOneIsRefused() throws {
        let conninfo = try PostgresCluster.shared().createDatabase()
        let database = String(conninfo.split(separator: " ").first { $0.hasPrefix("dbname=") }!.dropFirst(7))
        let dir = TempDir("relay-check")
        var configuration = RelayConfiguration(environment: [:])
        configuration.stateDirectory = dir.path
        configuration.storage = .postgresql
        configuration.postgresConnection = conninfo
        #expect(try RelayBackend.check(configuration).hasSuffix("has no relay tables yet; serve creates them"))
        #expect(try PostgresCluster.shared().sql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", database: database)
            .trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        _ = try PostgresRelayStorage(conninfo: conninfo, poolSize: 1)
        #expect(try RelayBackend.check(configuration).hasSuffix("schema version 4 (current)"))
        _ = try PostgresCluster.shared().sql("UPDATE relay_schema SET version = 5", database: database)
        #expect(throws: RelaySchemaTooNew.self) { try RelayBackend.check(configuration) }
        do {
            _ = try PostgresRelayStorage(conninfo: conninfo, poolSize: 1)
            Issue.record("a database of a newer ferry-relay was opened")
        } catch {
            #expect("\(error)".contains("schema version 5, newer than this ferry-relay knows (4)"), "\(error)")
        }
        #expect(try PostgresCluster.shared().sql("SELECT version FROM relay_schema", database: database)
            .trimmingCharacters(in: .whitespacesAndNewlines) == "5")
        // Another program's table of one of the relay's names: serve could not create its own.
        let shared = try PostgresCluster.shared().createDatabase()
        let sharedName = String(shared.split(separator: " ").first { $0.hasPrefix("dbname=") }!.dropFirst(7))
        _ = try PostgresCluster.shared().sql("CREATE TABLE tokens (x int)", database: sharedName)
        configuration.postgresConnection = shared
        do {
            _ = try RelayBackend.check(configuration)
            Issue.record("a database with another program's tokens table passed the check")
        } catch {
            #expect("\(error)".contains("tables named like the relay's (tokens)"), "\(error)")
        }
    }

    @Test func concurrentPushesAndSweepsThroughTwoStoragesKeepNumbersUnique() throws {
        let conninfo = try PostgresCluster.shared().createDatabase()
        let storages = [try PostgresRelayStorage(conninfo: conninfo, poolSize: 2), try PostgresRelayStorage(conninfo: conninfo, poolSize: 2)]
        try storages[0].createOwner(owner, quotaBytes: nil, now: 1)
        let failures = Counter()
        let rounds = 25, perBatch = 4
        DispatchQueue.concurrentPerform(iterations: 5) { worker in
            let s = storages[worker % 2]
            for round in 0..<rounds {
                if worker == 4 {
                    // The sweeper: tombstones of the other workers go while they push.
                    if (try? s.dropTombstones(storedBefore: Int64.max)) == nil { failures.add() }
                    continue
                }
                let batch = (0..<perBatch).map { i in
                    TestEnvelopes.incoming(TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: Int64(round * 10 + i),
                                                              deleted: i == 0))
                }
                if (try? s.push(owner, events: batch, quotaBytes: 1 << 30, now: Int64(round))) != Array(repeating: .stored, count: perBatch) {
                    failures.add()
                }
            }
        }
        #expect(failures.value == 0)
        _ = try storages[1].dropTombstones(storedBefore: Int64.max)
        let page = try storages[1].pull(owner, after: .start, limit: 10_000, maxBytes: 1 << 30)
        let live = 4 * rounds * (perBatch - 1)
        #expect(page.events.count == live && Set(page.events).count == live)
        // 400 numbers were taken, none twice: the last one is 400 whatever the sweeps removed.
        #expect(page.cursor == Cursor(Int64(4 * rounds * perBatch)))
        let usage = try #require(try storages[0].usage(owner))
        #expect(usage.events == Int64(live) && usage.eventBytes == Int64(page.events.map(\.count).reduce(0, +)))
    }

    @Test func blobsLiveInTheDatabaseInPieces() throws {
        let conninfo = try PostgresCluster.shared().createDatabase()
        let storage = try PostgresRelayStorage(conninfo: conninfo, poolSize: 1)
        try storage.createOwner(owner, quotaBytes: nil, now: 1)
        let dir = TempDir("pg-blobs")
        let blobs = try PostgresBlobStore(storage: storage, spool: dir.path + "/spool")
        let key = String(repeating: "c", count: 64)
        let bytes = (0..<(PostgresBlobStore.chunkBytes * 2 + 12345)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 11) }
        for _ in 0..<2 { // a second upload of the key replaces the first
            let (path, fd) = try blobs.createTemporary()
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
            close(fd)
            try blobs.commit(temporary: path, owner: owner, key: key)
            #expect(!FileManager.default.fileExists(atPath: path))
        }
        #expect(try storage.addBlob(owner, key: key, size: Int64(bytes.count), quotaBytes: 1 << 30, now: 2))
        guard case .stream(let size, let source) = blobs.body(owner, key: key, size: Int64(bytes.count)) else {
            Issue.record("not a streamed body"); return
        }
        #expect(size == bytes.count)
        var read: [UInt8] = []
        while read.count < size { read += try source.read(offset: Int64(read.count), maxBytes: 65536 + 3) }
        #expect(read == bytes)
        #expect(try source.read(offset: Int64(PostgresBlobStore.chunkBytes - 2), maxBytes: 10).count == 2)
        #expect(throws: (any Error).self) { try source.read(offset: Int64(bytes.count), maxBytes: 10) }
        #expect(try storage.deleteOwnerData(owner) == [key])
        #expect(throws: (any Error).self) { try source.read(offset: Int64(PostgresBlobStore.chunkBytes + 5), maxBytes: 10) }
    }

    @Test func theWakeListenerWakesForOtherRelaysPushesOnly() throws {
        let conninfo = try PostgresCluster.shared().createDatabase()
        let mine = try PostgresRelayStorage(conninfo: conninfo, poolSize: 1)
        let theirs = try PostgresRelayStorage(conninfo: conninfo, poolSize: 1)
        try mine.createOwner(owner, quotaBytes: nil, now: 1)
        let hub = LongPollHub()
        let listener = try PostgresWakeListener(conninfo: conninfo, storage: mine, hub: hub, logger: RelayLogger(level: .error, identifier: "ferry-relay"))
        listener.start()
        defer { listener.stop() }
        let before = hub.generation(owner)
        _ = try mine.push(owner, events: [TestEnvelopes.incoming(TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 1))],
                          quotaBytes: 1 << 30, now: 2)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(hub.generation(owner) == before, "this relay's own push is woken locally, not again by the listener")
        let t0 = Date()
        _ = try theirs.push(owner, events: [TestEnvelopes.incoming(TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 1))],
                            quotaBytes: 1 << 30, now: 3)
        while hub.generation(owner) == before, Date().timeIntervalSince(t0) < 5 { usleep(5_000) }
        #expect(hub.generation(owner) != before)
        #expect(Date().timeIntervalSince(t0) < 1)
        // A push that stores nothing (a duplicate) notifies nobody.
        let woken = hub.generation(owner)
        let page = try theirs.pull(owner, after: .start, limit: 10, maxBytes: 1 << 20)
        _ = try theirs.push(owner, events: [TestEnvelopes.incoming(try Envelope.decode(page.events[1]))], quotaBytes: 1 << 30, now: 4)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(hub.generation(owner) == woken)
        #expect(page.events.count == 2)
    }

    @Test func theWakeListenerReconnectsAndWakesEveryone() throws {
        let conninfo = try PostgresCluster.shared().createDatabase()
        let database = String(conninfo.split(separator: " ").first { $0.hasPrefix("dbname=") }!.dropFirst(7))
        let mine = try PostgresRelayStorage(conninfo: conninfo, poolSize: 1)
        let theirs = try PostgresRelayStorage(conninfo: conninfo, poolSize: 1)
        try mine.createOwner(owner, quotaBytes: nil, now: 1)
        let hub = LongPollHub()
        let listener = try PostgresWakeListener(conninfo: conninfo, storage: mine, hub: hub, logger: RelayLogger(level: .error, identifier: "ferry-relay", useJournal: false))
        listener.start()
        defer { listener.stop() }
        // The server drops the listening session: pushes meanwhile may be missed, so every
        // waiter is woken once it listens again.
        let before = hub.generation(owner)
        let killed = try PostgresCluster.shared().sql(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'",
            database: database)
        #expect(killed.trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        let t0 = Date()
        while hub.generation(owner) == before, Date().timeIntervalSince(t0) < 10 { usleep(10_000) }
        #expect(hub.generation(owner) != before)
        let reconnected = hub.generation(owner)
        _ = try theirs.push(owner, events: [TestEnvelopes.incoming(TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 1))],
                            quotaBytes: 1 << 30, now: 2)
        let t1 = Date()
        while hub.generation(owner) == reconnected, Date().timeIntervalSince(t1) < 5 { usleep(5_000) }
        #expect(hub.generation(owner) != reconnected && Date().timeIntervalSince(t1) < 1)
    }
}
