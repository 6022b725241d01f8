import FerryClient
import FerryJSON
import FerryTestSupport
import Foundation
import Testing

/// Real ferryd processes syncing through a real `ferry-relay` while things go wrong: the relay
/// killed mid-push and mid-pull, connections cut mid-body both ways, slow responses, pushes
/// replayed. In the end every record arrives exactly once: both daemons hold the same records,
/// the relay holds one event per stream, B's change log has one change per record (nothing
/// applied twice), and the daemons are still up.
@Suite(.serialized) struct RelayFaultTests {
    /// A relay with an owner, and devices `a` and `b` of it whose relay transport goes to
    /// `location(relay)` (the relay itself, or a proxy in front of it); both ferryd run with
    /// `environment` added to this process's.
    static func setUp(relayTimeoutSeconds: Int = 60, environment: [String: String] = [:],
                      through location: (RelayHarness) throws -> String = { $0.url })
        async throws -> (relay: RelayHarness, a: SyncDevice, b: SyncDevice, owner: String, token: String) {
        let relay = try RelayHarness()
        try relay.start()
        let url = try location(relay)
        let a = try SyncDevice("a", relayTimeoutSeconds: relayTimeoutSeconds), b = try SyncDevice("b")
        try a.start(environment: environment)
        try b.start(environment: environment)
        let (owner, token) = try await relay.pair(a, b, url: url)
        return (relay, a, b, owner, token)
    }

    /// `setUp` with both devices reaching the relay through a `FaultProxy` (the caller stops it).
    static func setUpThroughProxy(relayTimeoutSeconds: Int = 60, environment: [String: String] = [:])
        async throws -> (relay: RelayHarness, a: SyncDevice, b: SyncDevice, owner: String, token: String, proxy: FaultProxy) {
        var proxy: FaultProxy?
        let (relay, a, b, owner, token) = try await setUp(relayTimeoutSeconds: relayTimeoutSeconds, environment: environment) { relay in
            let p = try FaultProxy(upstreamPort: relay.port)
            proxy = p
            return p.url
        }
        return (relay, a, b, owner, token, try #require(proxy))
    }

    /// Writes `count` notes on `device` in PutMany calls of 500; their ids are `prefix` + index.
    static func write(_ count: Int, on device: SyncDevice, prefix: String) async throws {
        var items: [PutItem] = []
        for i in 0..<count { items.append(PutItem(entity: "note", id: "\(prefix)\(i)", payload: ["i": .int(Int64(i)), "pad": .string(String(repeating: "x", count: 200))])) }
        for start in stride(from: 0, to: count, by: 500) {
            _ = try await device.client().putMany(Array(items[start..<min(start + 500, count)]))
        }
    }

    /// The relay's event count for `owner`.
    static func relayEvents(_ relay: RelayHarness, owner: String, token: String) throws -> Int {
        let reply = try RelayHarness.rawHTTP(port: relay.port,
            "GET /v1/owners/\(owner) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\nConnection: close\r\n\r\n")
        guard let body = reply.range(of: "\r\n\r\n").map({ reply[$0.upperBound...] }),
              let json = try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
              let events = json["events"] as? Int else { throw HarnessError("owner info: \(reply.prefix(300))") }
        return events
    }

    /// How many times each record id appears in `device`'s change log, from its start.
    static func changeCounts(_ device: SyncDevice) async throws -> [String: Int] {
        let client = try device.client()
        var end: Int64 = 0
        for try await event in client.watch() {
            if case .started(let cursor) = event { end = cursor }
            break
        }
        var counts: [String: Int] = [:]
        guard end > 0 else { return counts }
        for try await event in client.watch(since: 0) {
            guard case .change(let record, let cursor) = event else { continue }
            counts[record.id, default: 0] += 1
            if cursor >= end { break }
        }
        return counts
    }

    /// Both converged on `expected` records, exactly once on B and on the relay.
    static func expectExactlyOnce(_ relay: RelayHarness, _ a: SyncDevice, _ b: SyncDevice, owner: String, token: String,
                                  expected: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await a.client().syncNow()
        try await b.client().syncNow()
        let arrived = try await eventually(.seconds(120), poll: .milliseconds(200)) {
            let onB = try await b.records().count
            let onA = try await a.records().count
            return onA == expected && onB == expected
        }
        let onB = try await b.records().count
        #expect(arrived, "b has \(onB) of \(expected)", sourceLocation: sourceLocation)
        let (onA, all) = (try await a.records(), try await b.records())
        #expect(onA == all, "a and b differ", sourceLocation: sourceLocation)
        // One event per stream on the relay: nothing stored twice.
        _ = try await eventually(.seconds(30)) { try relayEvents(relay, owner: owner, token: token) == expected }
        let onRelay = try relayEvents(relay, owner: owner, token: token)
        #expect(onRelay == expected, "the relay holds \(onRelay) events for \(expected) streams", sourceLocation: sourceLocation)
        // B applied each version once: one change per record in its change log.
        let counts = try await changeCounts(b)
        #expect(counts.count == expected, "b's change log names \(counts.count) records", sourceLocation: sourceLocation)
        let twice = counts.filter { $0.value != 1 }
        #expect(twice.isEmpty, "applied more than once on b: \(twice.prefix(5))", sourceLocation: sourceLocation)
        #expect(a.harness.isRunning && b.harness.isRunning, sourceLocation: sourceLocation)
    }

    @Test func theRelayKilledMidPushAndMidPullLosesAndDoublesNothing() async throws {
        let (relay, a, b, owner, token) = try await Self.setUp()
        let total = 4000
        try await Self.write(total, on: a, prefix: "k")
        // Mid-push: some of A's batches are on the relay, not all.
        let midPush = try await eventually(.seconds(60), poll: .milliseconds(5)) {
            try Self.relayEvents(relay, owner: owner, token: token) > 0
        }
        #expect(midPush)
        relay.crash()
        try await Task.sleep(for: .milliseconds(300))
        try relay.start()
        // Mid-pull: B has some of the records, not all.
        let midPull = try await eventually(.seconds(60), poll: .milliseconds(5)) {
            let n = try await b.client().status().records
            return n > 0 && n < total
        }
        let bHad = try await b.client().status().records
        print("relay fault: killed mid-pull: \(midPull) (b had \(bHad) of \(total))")
        relay.crash()
        try await Task.sleep(for: .milliseconds(300))
        try relay.start()
        try await Self.expectExactlyOnce(relay, a, b, owner: owner, token: token, expected: total)
    }

    @Test func connectionsCutMidBodyAndSlowResponsesThroughAFaultProxy() async throws {
        let (relay, a, b, owner, token, faults) = try await Self.setUpThroughProxy()
        defer { faults.stop() }
        var total = 0

        // Requests cut mid-body: a batch of 1,200 envelopes is far larger than 20 KB, so every push
        // breaks off inside its body; the relay must store none of a cut batch.
        faults.set(.dropRequest(afterBytes: 20_000))
        try await Self.write(1200, on: a, prefix: "req")
        total += 1200
        #expect(try await eventually(.seconds(30)) { faults.cuts >= 2 })
        #expect(try Self.relayEvents(relay, owner: owner, token: token) == 0)
        faults.set(.pass)
        try await Self.expectExactlyOnce(relay, a, b, owner: owner, token: token, expected: total)

        // Responses cut: a push is stored but its answer lost, so A (which moves on only past
        // acknowledged batches) sends the same batch again and again, and the relay answers
        // duplicate; B's pull pages break off mid-body and are pulled again.
        faults.set(.dropResponse(afterBytes: 300))
        let cutsBefore = faults.cuts
        try await Self.write(1200, on: a, prefix: "resp")
        let stored = total
        total += 1200
        #expect(try await eventually(.seconds(30)) { try Self.relayEvents(relay, owner: owner, token: token) > stored })
        #expect(try await eventually(.seconds(30)) { faults.cuts > cutsBefore + 2 })
        let unanswered = try Self.relayEvents(relay, owner: owner, token: token)
        #expect(unanswered < total, "every push got through with its answer cut: \(unanswered)")
        faults.set(.pass)
        try await Self.expectExactlyOnce(relay, a, b, owner: owner, token: token, expected: total)

        // Slow: every chunk held 150 ms both ways, while both write.
        faults.set(.delay(milliseconds: 150))
        try await Self.write(300, on: a, prefix: "slow-a")
        try await Self.write(300, on: b, prefix: "slow-b")
        total += 600
        try await Self.expectExactlyOnce(relay, a, b, owner: owner, token: token, expected: total)
        faults.set(.pass)
    }

    /// A blob upload cut mid-body, and a blob download cut inside the response's head, fail
    /// and are retried: neither daemon ends (URLSession's file transfers trapped on both: an
    /// outside check saw ferryd die every time, and crash-loop while the link stayed bad), no
    /// temporary file is left, and the attachment arrives once the link is good.
    @Test func blobTransfersCutMidwayEndNeitherDaemon() async throws {
        let (relay, a, b, _, _, faults) = try await Self.setUpThroughProxy()
        defer { faults.stop() }
        #expect(RelayHarness.healthy(port: relay.port))
        let bytes = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let attachment = try await a.client().putAttachment(data: bytes)
        try await b.client().setSyncPaused(true)

        /// Sets `mode`, has `device` sync, and expects a cut to have happened and the device to
        /// be running a second later.
        func cut(_ mode: FaultProxy.Mode, on device: SyncDevice) async throws {
            let cutsBefore = faults.cuts
            faults.set(mode)
            try await device.client().setSyncPaused(false)
            try await device.client().syncNow()
            #expect(try await eventually(.seconds(30)) { faults.cuts > cutsBefore }, "no cut with \(mode): \(device.logTail)")
            try await Task.sleep(for: .seconds(1))
            #expect(device.harness.isRunning, "\(mode): \(device.logTail)")
        }
        _ = try await a.client().put(entity: "note", id: "with-blob", payload: ["v": 1], attachments: [attachment.sha256])
        for bytes in [20_000, 300_000, 1_000_000] { try await cut(.resetRequest(afterBytes: bytes), on: a) }

        faults.set(.pass)
        try await a.client().syncNow()
        #expect(try await eventually(.seconds(60)) { try await a.client().outbox().isEmpty }, "\(a.logTail)")
        for bytes in [60, 100, 3000] { try await cut(.dropBlobResponse(afterBytes: bytes), on: b) }
        faults.set(.pass)
        try await b.client().syncNow()
        #expect(await eventually(.seconds(60)) { await b.hasAttachment(attachment.sha256, bytes: bytes) }, "\(b.logTail)")
        #expect(a.harness.isRunning && b.harness.isRunning && RelayHarness.healthy(port: relay.port))
        // The attachment is readable as soon as the store has it, a moment before the fetch
        // that stored it removes its opened copy from the scratch directory: nothing may stay
        // there once the fetches are done.
        for device in [a, b] {
            #expect(try await eventually(.seconds(10)) { filesBelow(device.harness.stateDirectory + "/tmp").isEmpty },
                    "\(filesBelow(device.harness.stateDirectory + "/tmp"))")
        }
    }

    /// Answers cut inside their head, on the way ferryd's https:// requests go: URLSession,
    /// which http:// ones take too behind a proxy (here http_proxy is set, and no_proxy names the
    /// relay's address so that libcurl connects directly). FoundationNetworking traps on such
    /// an answer ("Transfer completed, but there's no response") and ends its process; that is
    /// ferryd's https helper, so neither ferryd ends: the cut requests fail and are retried, the
    /// helper starts again, ferryd says what happened, and once the link is good every record
    /// gets through. (ferryd itself ended on the first cut before the helper.)
    @Test func answersCutInsideTheirHeadEndTheHelperNotFerryd() async throws {
        let environment = ["http_proxy": "http://127.0.0.1:9", "no_proxy": "127.0.0.1"]
        let (relay, a, b, owner, token, faults) = try await Self.setUpThroughProxy(environment: environment)
        defer { faults.stop() }
        try await Self.write(20, on: a, prefix: "before")
        #expect(try await eventually(.seconds(60)) { try await b.records().count == 20 }, "\(b.logTail)")

        let cutsBefore = faults.cuts
        faults.set(.dropResponse(afterBytes: 20))
        try await Self.write(20, on: a, prefix: "cut")
        try await a.client().syncNow()
        try await b.client().syncNow()
        #expect(try await eventually(.seconds(30)) { faults.cuts >= cutsBefore + 3 }, "\(a.logTail)\n\(b.logTail)")
        try await Task.sleep(for: .seconds(1))
        #expect(a.harness.isRunning && b.harness.isRunning, "\(a.logTail)\n\(b.logTail)")
        let log = a.harness.log + b.harness.log
        #expect(log.contains("the https helper (pid"), "\(a.logTail)")
        #expect(!log.contains("Backtrace"), "the helper's crash report is not in ferryd's log")
        // What the helper wrote as it ended is logged as its words, not as a line of ferryd's.
        #expect(log.contains(") said: ") && !log.split(separator: "\n").contains { $0.hasPrefix("FoundationNetworking") }, "\(a.logTail)")

        faults.set(.pass)
        try await a.client().syncNow()
        try await b.client().syncNow()
        #expect(try await eventually(.seconds(60)) { try await b.records().count == 40 }, "\(b.logTail)")
        try await Self.expectExactlyOnce(relay, a, b, owner: owner, token: token, expected: 40)
        #expect(a.harness.isRunning && b.harness.isRunning)
    }

    /// A helper that stops answering (stuck; here stopped with SIGSTOP) holds neither the sync
    /// nor ferryd's stop: it is ended once it leaves its pings unanswered, a new one carries
    /// the records, and a ferryd whose new helper is stuck too still stops within systemd's
    /// stop timeout (an outside check saw the pushes wait for ever and SIGTERM not end ferryd).
    @Test func aStuckHelperHoldsNeitherTheSyncNorTheStop() async throws {
        let environment = ["http_proxy": "http://127.0.0.1:9", "no_proxy": "127.0.0.1"]
        let (relay, a, b, _, _) = try await Self.setUp(environment: environment)
        defer { withExtendedLifetime(relay) {} }
        try await Self.write(5, on: a, prefix: "before")
        #expect(try await eventually(.seconds(60)) { try await b.records().count == 5 }, "\(b.logTail)")
        let pid = try #require(a.harness.process?.processIdentifier)
        let stuck = try #require(RelayTLSTests.helpers(of: pid).first)
        kill(stuck, SIGSTOP)
        try await Self.write(5, on: a, prefix: "during")
        #expect(try await eventually(.seconds(90)) { try await b.records().count == 10 }, "\(a.logTail)")
        #expect(a.harness.log.contains("(pid \(stuck)) has not answered for"), "\(a.logTail)")

        let again = try #require(RelayTLSTests.helpers(of: pid).first)
        #expect(again != stuck)
        kill(again, SIGSTOP)
        try await Self.write(1, on: a, prefix: "at-stop")
        kill(pid, SIGTERM)
        #expect(try await eventually(.seconds(30)) { !a.harness.isRunning }, "\(a.logTail)")
        if a.harness.isRunning { a.harness.crash() }
        kill(again, SIGKILL)
    }

    /// The relay restored from an older backup (the tester's report): the devices' cursors are
    /// beyond everything it holds, and what A pushed after the backup is gone from it. The first
    /// device to pull is refused (409 lost_data) and starts over: it reads the relay from the
    /// start and pushes everything again, which carries the relay's numbers past the other's
    /// old cursor; that one is refused all the same (the relay refuses every cursor from before
    /// it found the restore), so it starts over too and skips none of the new records.
    /// Afterwards the relay holds every record again and a device paired then gets them all.
    @Test func aRelayRestoredFromAnOlderBackupIsFilledAgainAndSkipsNothing() async throws {
        let (relay, a, b, owner, token) = try await Self.setUp()
        try await Self.write(5, on: a, prefix: "old")
        try await Self.expectExactlyOnce(relay, a, b, owner: owner, token: token, expected: 5)

        // The backup: the relay stopped (its WAL checkpointed), its whole state directory copied.
        let state = relay.root + "/state", backup = relay.root + "/backup"
        #expect(relay.stop() == 0)
        try FileManager.default.copyItem(atPath: state, toPath: backup)
        try relay.start()
        // Records put on A after the backup, which B receives: both cursors move past them.
        try await Self.write(20, on: a, prefix: "lost")
        try await a.client().syncNow()
        #expect(try await eventually(.seconds(60)) { try await b.records().count == 25 })
        #expect(try Self.relayEvents(relay, owner: owner, token: token) == 25)

        // The restore: the relay holds the 5 old records again, with its old sequence numbers.
        #expect(relay.stop() == 0)
        try FileManager.default.removeItem(atPath: state)
        try FileManager.default.copyItem(atPath: backup, toPath: state)
        try relay.start()
        #expect(try Self.relayEvents(relay, owner: owner, token: token) == 5)

        // 9 new records on B, fewer than the 20 A's cursor is ahead by: without the refusal A
        // never gets them (the tester's report).
        try await Self.write(9, on: b, prefix: "new")
        let expected = 34
        let arrived = try await eventually(.seconds(90), poll: .milliseconds(200)) {
            let onA = try await a.records().count
            let onB = try await b.records().count
            return onA == expected && onB == expected
        }
        let (onA, onB) = (try await a.records(), try await b.records())
        if !arrived {
            let ta = try await a.transport("relay"), tb = try await b.transport("relay")
            Issue.record("a has \(onA.count), b \(onB.count) of \(expected); a's relay: cursor \(ta?.cursor ?? "-"), \(ta?.state ?? "-"), \(ta?.lastError ?? "-"); b's: cursor \(tb?.cursor ?? "-"), \(tb?.lastError ?? "-")\n\(a.logTail)\n\(b.logTail)\n--- relay log:\n\(relay.log.suffix(3000))")
        }
        let same = onA == onB
        #expect(same, "a and b differ: \(Set(onA.keys).symmetricDifference(onB.keys).sorted())")
        #expect(onA.keys.filter { $0.hasPrefix("new") }.count == 9)
        // Both started over and pushed everything again: the relay holds every record, and both
        // outboxes are empty.
        #expect(try await eventually(.seconds(60)) { try Self.relayEvents(relay, owner: owner, token: token) == expected })
        #expect(try await eventually(.seconds(60)) {
            let aDone = try await a.client().outbox(limit: 1).isEmpty
            let bDone = try await b.client().outbox(limit: 1).isEmpty
            return aDone && bDone
        })
        let found = relay.log.contains("every cursor of the owner handed out so far is refused")
        #expect(found, "the relay did not log finding the restore: \(relay.log.suffix(2000))")

        // A device paired now gets every record from the relay alone.
        let c = try SyncDevice("c")
        try c.start()
        try await c.joinOwner(of: a)
        let (code, _) = try await a.client().relayPairingCode()
        _ = try await c.client().addTransport(name: "relay", kind: "relay", location: relay.url, code: code)
        #expect(try await eventually(.seconds(60)) { try await c.records().count == expected })
        let onC = try await c.records()
        let cHasAll = onC == onA
        #expect(cHasAll, "c and a differ: \(Set(onC.keys).symmetricDifference(onA.keys).sorted())")
        #expect(a.harness.isRunning && b.harness.isRunning && c.harness.isRunning)
    }

    /// A's state directory is restored from a backup taken before it pushed 20 more records
    /// and edited one (all on the relay and on B): A keeps its node id, its first pulls after
    /// the start read its own events back from the relay, so it gets every record again; a
    /// write it makes afterwards wins over its own version from before the restore, on both
    /// devices; and a restart afterwards reads nothing twice.
    @Test func aDeviceRestoredFromAnOlderBackupGetsBackWhatItPushedSince() async throws {
        let (relay, a, b, owner, token) = try await Self.setUp()
        try await Self.write(5, on: a, prefix: "old")
        try await Self.expectExactlyOnce(relay, a, b, owner: owner, token: token, expected: 5)
        let node = try await a.client().status().node

        #expect(a.harness.stop() == 0)
        let backup = a.harness.root + "/backup"
        try a.backUpState(to: backup)
        try a.start()
        try await Self.write(20, on: a, prefix: "since")
        _ = try await a.client().put(entity: "note", id: "old0", payload: ["edited": "before the restore"])
        #expect(try await eventually(.seconds(60)) { try await a.client().outbox(limit: 1).isEmpty }, "\(a.logTail)")
        #expect(try await eventually(.seconds(60)) { try await b.records() == a.records() }, "\(b.logTail)")
        let beforeRestore = try await b.records()
        #expect(beforeRestore.count == 25)

        #expect(a.harness.stop() == 0)
        try a.restoreState(from: backup)
        try a.start()
        #expect(try await a.client().status().node == node, "restored on the same machine, a keeps its node id")
        let back = try await eventually(.seconds(60)) { try await a.records() == beforeRestore }
        if !back {
            let onA = try await a.records()
            Issue.record("a has \(onA.count) of \(beforeRestore.count): \(Set(beforeRestore.keys).subtracting(onA.keys).sorted().prefix(5))\n\(a.logTail)")
        }
        #expect(try await b.records() == beforeRestore)

        // A new write after the restore wins over a's own version from before it.
        let old = try #require(beforeRestore["old0"])
        let edit = try await a.client().put(entity: "note", id: "old0", payload: ["edited": "after the restore"])
        #expect(edit.hlc > old.hlc, "\(edit.hlc) vs \(old.hlc)")
        #expect(try await eventually(.seconds(60)) { try await b.records()["old0"]?.payload?.contains("after the restore") == true },
                "\(b.logTail)")
        #expect(try await eventually(.seconds(60)) { try await a.records() == b.records() })
        #expect(try await a.records().count == 25)
        // The relay holds one event per record: nothing was stored twice.
        #expect(try await eventually(.seconds(30)) { try Self.relayEvents(relay, owner: owner, token: token) == 25 })

        // A normal restart reads back only what a pushed after its last saved cursor (at most
        // its last edit), not the 21 versions it read back after the restore.
        let pulledAfterRestore = try await a.transport("relay")?.pulled ?? 0
        #expect(pulledAfterRestore >= 21, "a read back \(pulledAfterRestore) versions after the restore")
        #expect(a.harness.stop() == 0)
        try a.start()
        _ = try await b.client().put(entity: "note", id: "from-b", payload: ["v": 1])
        #expect(try await eventually(.seconds(60)) { try await a.records()["from-b"] != nil })
        let pulledAfterRestart = try await a.transport("relay")?.pulled ?? 0
        #expect(pulledAfterRestart <= 3, "a pulled \(pulledAfterRestart) versions after a normal restart")
        #expect(a.harness.isRunning && b.harness.isRunning)
    }

    /// A push on a slow uplink (its body is taken into socket buffers at once and then trickles
    /// out, so no progress shows until the relay answers) times out; the transport sends fewer
    /// envelopes per push from then on, and every record gets through, exactly once.
    @Test func aSlowUplinkStillGetsEveryRecordThrough() async throws {
        let (relay, a, b, owner, token, link) = try await Self.setUpThroughProxy(relayTimeoutSeconds: 3)
        defer { link.stop() }
        link.set(.throttleRequests(bytesPerSecond: 60_000))
        // About 290 KB in one write, so in one push: 5 s at 60 KB/s, over A's 3 s timeout.
        let items = (0..<600).map { i in
            PutItem(entity: "note", id: "s\(i)", payload: ["i": .int(Int64(i)), "pad": .string(String(repeating: "x", count: 200))])
        }
        _ = try await a.client().putMany(items)
        try await Self.expectExactlyOnce(relay, a, b, owner: owner, token: token, expected: 600)
        let pushes = link.capturedRequests.flatMap(CapturedRequest.parse)
            .filter { $0.method == "POST" && $0.target.hasSuffix("/events") }
        let sizes = pushes.map { push in
            ((try? JSONSerialization.jsonObject(with: Data(push.body)) as? [String: Any])?["events"] as? [Any])?.count ?? 0
        }
        // One write is one batch: a push of 300 or fewer happens only when one timed out.
        #expect(sizes.contains { $0 > 0 && $0 <= 300 }, "pushes of \(sizes) envelopes")
    }

    @Test func aReplayedPushIsADuplicateAndStoredOnce() async throws {
        let (relay, a, b, owner, token, capture) = try await Self.setUpThroughProxy()
        defer { capture.stop() }
        // More than one push's worth (a relay push takes 2,000 envelopes).
        try await Self.write(2500, on: a, prefix: "r")
        try await Self.expectExactlyOnce(relay, a, b, owner: owner, token: token, expected: 2500)
        let pushes = capture.capturedRequests.flatMap(CapturedRequest.parse)
            .filter { $0.method == "POST" && $0.target.hasSuffix("/events") }
        #expect(pushes.count >= 2, "captured \(pushes.count) pushes")
        // Replayed straight to the relay, as captured (with A's token): every event a duplicate.
        for push in pushes {
            let events = (try? JSONSerialization.jsonObject(with: Data(push.body)) as? [String: Any])?["events"] as? [Any] ?? []
            let head = "POST \(push.target) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: \(push.headers["authorization"] ?? "")\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(push.body.count)\r\nConnection: close\r\n\r\n"
            let reply = try RelayHarness.rawHTTP(port: relay.port, head + String(decoding: push.body, as: UTF8.self))
            #expect(reply.hasPrefix("HTTP/1.1 200"), "\(reply.prefix(200))")
            let body = reply.range(of: "\r\n\r\n").map { String(reply[$0.upperBound...]) } ?? ""
            let results = (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["results"] as? [[String: Any]] ?? []
            #expect(results.count == events.count && !results.isEmpty)
            #expect(results.allSatisfy { $0["status"] as? String == "duplicate" }, "\(results.prefix(3))")
        }
        // Nothing new anywhere: the relay still holds one event per stream, B applied nothing again.
        try await Task.sleep(for: .seconds(1))
        try await Self.expectExactlyOnce(relay, a, b, owner: owner, token: token, expected: 2500)
    }
}
