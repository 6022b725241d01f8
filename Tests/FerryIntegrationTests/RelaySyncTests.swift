import FerryClient
import FerryJSON
import FerryTestSupport
import Foundation
import Testing

/// Real ferryd processes syncing through a real `ferry-relay` on loopback, on each storage
/// backend (SQLite, and PostgreSQL in a throwaway cluster).
@Suite(.serialized) struct RelaySyncTests {
    static let backends = ["sqlite", "postgresql"]

    /// A relay with an owner, and `count` devices of that owner on it: the first with the
    /// operator's token, the others paired with codes from the first.
    static func setUp(_ count: Int, storage: String, relayConfig: String = "", quota: Int64? = nil,
                      blobRetentionSeconds: Int? = nil) async throws -> (RelayHarness, [SyncDevice], String) {
        var config = relayConfig
        if storage == "postgresql" {
            config = "Storage=postgresql\n" + relayConfig + "\n[PostgreSQL]\nConnection=\(try PostgresCluster.shared().createDatabase())\n"
        }
        let relay = try RelayHarness(extraConfig: config)
        try relay.start()
        var devices: [SyncDevice] = []
        var owner = ""
        for i in 0..<count {
            let d = try SyncDevice(["a", "b", "c"][i], blobRetentionSeconds: blobRetentionSeconds)
            try d.start()
            if let first = devices.first {
                try await d.joinOwner(of: first)
                let (code, _) = try await first.client().relayPairingCode()
                _ = try await d.client().addTransport(name: "relay", kind: "relay", location: relay.url, code: code)
            } else {
                owner = try #require(try await d.client().spaces().first { $0.name == "private" }?.owner)
                let (token, _) = try relay.createOwner(owner, quota: quota)
                _ = try await d.client().addTransport(name: "relay", kind: "relay", location: relay.url, token: token)
            }
            devices.append(d)
        }
        return (relay, devices, owner)
    }

    static func converged(_ devices: [SyncDevice]) async throws -> Bool {
        let first = try await devices[0].records()
        for d in devices.dropFirst() where try await d.records() != first { return false }
        return true
    }

    @Test(arguments: RelaySyncTests.backends) func threeDevicesConvergeThroughTheRelay(_ storage: String) async throws {
        let (relay, devices, _) = try await Self.setUp(3, storage: storage)
        let (a, b, c) = (devices[0], devices[1], devices[2])
        for i in 0..<40 { _ = try await a.client().put(entity: "note", id: "n\(i)", payload: ["i": .int(Int64(i)), "by": "a"]) }
        #expect(try await eventually(.seconds(30)) { try await c.records().count == 40 })
        for i in 0..<10 { _ = try await b.client().put(entity: "note", id: "n\(i)", payload: ["by": "b"]) }
        for i in 10..<15 { _ = try await c.client().delete(entity: "note", id: "n\(i)") }
        #expect(try await eventually(.seconds(60)) {
            let same = try await Self.converged(devices)
            let count = try await a.records().count
            return same && count == 40
        })
        let final = try await c.records()
        #expect(final.values.filter(\.deleted).count == 5)
        // The relay stores ciphertext only.
        #expect(!folderContains(relay.root + "/state", "\"by\""))
        #expect(!folderContains(relay.root + "/state", "note"))
        // Long-poll: one record, A to B, arrives quickly (no poll interval involved).
        let started = ContinuousClock.now
        _ = try await a.client().put(entity: "note", id: "fast", payload: ["v": 1])
        #expect(try await eventually(.seconds(10), poll: .milliseconds(2)) { try await b.records()["fast"] != nil })
        print("relay: one record A to B in \(ContinuousClock.now - started)")
    }

    /// Pairing a device again gives it a new token and revokes the one it had, so a relay does
    /// not collect live tokens nobody uses; the device goes on syncing with the new one. Removing
    /// the transport revokes a paired token too; the operator's token stays.
    @Test func pairingAgainRevokesTheTokenItReplaces() async throws {
        let (relay, devices, owner) = try await Self.setUp(2, storage: "sqlite")
        let (a, b) = (devices[0], devices[1])
        let bNode = try await b.client().status().node
        let before = try relay.tokens(owner).filter { $0.device.contains(bNode) }
        #expect(before.count == 1)
        let (code, _) = try await a.client().relayPairingCode()
        _ = try await b.client().addTransport(name: "relay", kind: "relay", location: relay.url, code: code)
        let after = try relay.tokens(owner).filter { $0.device.contains(bNode) }
        #expect(after.count == 1 && after.first?.id != before.first?.id, "before \(before), after \(after)")
        #expect(try relay.tokens(owner).count == 2, "a's token and b's new one")
        _ = try await b.client().put(entity: "note", id: "after-pairing", payload: ["v": 1])
        #expect(try await eventually(.seconds(30)) { try await a.records()["after-pairing"] != nil })
        // Paired again at another URL of the same relay (through a proxy): the token it had is
        // revoked at its old URL all the same (it used to stay valid).
        let proxy = try FaultProxy(upstreamPort: relay.port)
        defer { proxy.stop() }
        let (another, _) = try await a.client().relayPairingCode()
        _ = try await b.client().addTransport(name: "relay", kind: "relay", location: proxy.url, code: another)
        let moved = try relay.tokens(owner).filter { $0.device.contains(bNode) }
        #expect(moved.count == 1 && moved.first?.id != after.first?.id, "before \(after), after \(moved)")
        // Moved back while the old URL (the proxy) is gone: revoked through the new URL, the
        // same relay.
        proxy.stop()
        let (back, _) = try await a.client().relayPairingCode()
        let added = try await b.client().addTransport(name: "relay", kind: "relay", location: relay.url, code: back)
        let home = try relay.tokens(owner).filter { $0.device.contains(bNode) }
        #expect(home.count == 1 && home.first?.id != moved.first?.id && added.warning == nil, "before \(moved), after \(home), \(added.warning ?? "")")
        try await b.client().removeTransport(name: "relay")
        #expect(try relay.tokens(owner).filter { $0.device.contains(bNode) }.isEmpty)
        try await a.client().removeTransport(name: "relay")
        #expect(try relay.tokens(owner).count == 1, "the operator's token stays")
    }

    /// A code redeemed by a device whose space belongs to another owner (it pairs before
    /// restoring the owner's phrase) is spent, and the token it gave is revoked at once rather
    /// than left valid on the relay; the refusal says to restore, then make a new code. After
    /// the restore a new code pairs it.
    @Test func aCodeRedeemedBeforeTheRestoreLeavesNoTokenBehind() async throws {
        let (relay, devices, owner) = try await Self.setUp(1, storage: "sqlite")
        let a = devices[0]
        let b = try SyncDevice("b")
        try b.start()
        // Why `device` could not pair with a new code of a's.
        func pairingRefusal(of device: SyncDevice) async throws -> String {
            let (code, _) = try await a.client().relayPairingCode()
            do {
                _ = try await device.client().addTransport(name: "relay", kind: "relay", location: relay.url, code: code)
                return "the code of another owner was accepted"
            } catch {
                return "\(error)"
            }
        }
        let refusal = try await pairingRefusal(of: b)
        #expect(refusal.contains("ferryctl owner restore") && refusal.contains("make a new code") && refusal.contains("used up"), "\(refusal)")
        #expect(!refusal.contains("could not be revoked"), "\(refusal)")
        let live = try relay.tokens(owner)
        #expect(live.count == 1, "only a's token stays live: \(live)")
        #expect(try await b.client().transports().isEmpty)
        // A device with another space of that owner is told to add the transport there.
        let c = try SyncDevice("c")
        try c.start()
        _ = try await c.client().createSpace(name: "team")
        let (_, phrase) = try await a.client().ownerPhrase()
        _ = try await c.client().restoreOwner(space: "team", phrase: phrase)
        let misplaced = try await pairingRefusal(of: c)
        #expect(misplaced.contains("space team on this device belongs to that owner: add the transport there (--space team)"), "\(misplaced)")
        try await b.joinOwner(of: a)
        let (again, _) = try await a.client().relayPairingCode()
        _ = try await b.client().addTransport(name: "relay", kind: "relay", location: relay.url, code: again)
        _ = try await a.client().put(entity: "note", id: "paired", payload: ["v": 1])
        #expect(try await eventually(.seconds(30)) { try await b.records()["paired"] != nil })
    }

    @Test(arguments: RelaySyncTests.backends) func aRevokedTokenIsRefusedAndOthersGoOn(_ storage: String) async throws {
        let (relay, devices, owner) = try await Self.setUp(2, storage: storage)
        let (a, b) = (devices[0], devices[1])
        _ = try await a.client().put(entity: "note", id: "first", payload: ["v": 1])
        #expect(try await eventually(.seconds(30)) { try await b.records()["first"] != nil })
        let tokens = try relay.tokens(owner)
        let bNode = try await b.client().status().node
        let bToken = try #require(tokens.first { $0.device.contains(bNode) })
        #expect(try relay.admin(["revoke", owner, bToken.id]).status == 0)
        _ = try await b.client().put(entity: "note", id: "from-b", payload: ["v": 2])
        try await b.client().syncNow()
        #expect(try await eventually(.seconds(30)) { try await b.transport("relay")?.lastErrorKind == "unauthorized" })
        _ = try await a.client().put(entity: "note", id: "second", payload: ["v": 3])
        try await Task.sleep(for: .seconds(1))
        #expect(try await a.records()["from-b"] == nil)
        #expect(try await b.records()["second"] == nil)
        #expect(b.harness.isRunning)
        // What b's user reads: what happened, and the advice once.
        let refusal = try #require(try await b.transport("relay")?.lastError)
        #expect(refusal.contains("the token is unknown or revoked"), "\(refusal)")
        #expect(refusal.components(separatedBy: "pair this device again").count == 2, "\(refusal)")
        #expect(refusal.contains("'ferryctl transport add NAME relay URL --code CODE'"), "\(refusal)")

        // A wrong pairing code: about the code, not a word of a token.
        do {
            _ = try await a.client().addTransport(name: "again", kind: "relay", location: relay.url, code: "WRNG-CODE-XXXX")
            Issue.record("a wrong pairing code was accepted")
        } catch {
            let message = "\(error)"
            #expect(message.contains("the pairing code is wrong, expired or already used") && message.contains("make a new code")
                    && !message.contains("token"), "\(message)")
        }
    }

    /// A user cuts a lost device off from another device: `RelayDevices` lists the owner's
    /// devices with this one marked (an operator's token as well as a paired one), and
    /// `RelayRevoke` revokes another device's token, after which that device is refused and the
    /// others go on. A device's own token, a malformed id and an id already revoked are refused
    /// with what to do instead, and change nothing; ferryctl shows and does the same.
    @Test func aLostDeviceIsCutOffFromAnotherDevice() async throws {
        let (relay, devices, owner) = try await Self.setUp(3, storage: "sqlite")
        let (a, b, c) = (devices[0], devices[1], devices[2])
        let bNode = try await b.client().status().node
        let bToken = try #require(try relay.tokens(owner).first { $0.device.contains(bNode) })

        let (listedOwner, url, seenByA) = try await a.client().relayDevices()
        #expect(listedOwner == owner && url == relay.url)
        #expect(Set(seenByA.map(\.id)) == Set(try relay.tokens(owner).map(\.id)) && seenByA.count == 3, "\(seenByA)")
        let aOwn = try #require(seenByA.first { $0.thisDevice }, "a is marked (its token is the operator's, not a paired one)")
        #expect(seenByA.filter(\.thisDevice).count == 1 && aOwn.id != bToken.id)
        let seenByB = try await b.client().relayDevices().devices
        #expect(seenByB.filter(\.thisDevice).map(\.id) == [bToken.id], "\(seenByB)")
        #expect(seenByB.allSatisfy { $0.role == "owner" && $0.createdAt > 0 })

        // Its own token: refused, and a keeps syncing.
        await #expect {
            try await a.client().relayRevoke(id: aOwn.id)
        } throws: { error in
            "\(error)".contains("this device's own") && "\(error)".contains("ferryctl transport rm relay")
        }
        await #expect(throws: FerryClientError.self) { try await a.client().relayRevoke(id: "not-an-id") }
        #expect(try relay.tokens(owner).count == 3)

        // b is lost: a revokes its token. b is refused; a and c go on.
        try await a.client().relayRevoke(id: bToken.id)
        #expect(try relay.tokens(owner).map(\.id).contains(bToken.id) == false)
        let left = try await a.client().relayDevices().devices
        #expect(left.count == 2)
        _ = try await b.client().put(entity: "note", id: "from-lost-b", payload: ["v": 1])
        try await b.client().syncNow()
        #expect(try await eventually(.seconds(30)) { try await b.transport("relay")?.lastErrorKind == "unauthorized" })
        _ = try await c.client().put(entity: "note", id: "from-c", payload: ["v": 2])
        #expect(try await eventually(.seconds(30)) { try await a.records()["from-c"] != nil })
        _ = try await a.client().put(entity: "note", id: "from-a", payload: ["v": 3])
        #expect(try await eventually(.seconds(30)) { try await c.records()["from-a"] != nil })
        let aHasLost = try await a.records()["from-lost-b"] != nil, cHasLost = try await c.records()["from-lost-b"] != nil
        #expect(!aHasLost && !cHasLost)

        // Revoked already: refused, saying so.
        await #expect {
            try await a.client().relayRevoke(id: bToken.id)
        } throws: { error in "\(error)".contains("no live token \(bToken.id)") }

        // ferryctl: the table marks this device; revoke cuts c off; --json has the ids.
        let ctl = try CtlRunner(socket: a.harness.socketPath)
        let table = try ctl.run(["relay", "devices"])
        #expect(table.status == 0 && table.lines.count == 3, "\(table)")
        #expect(table.lines.contains { $0.hasPrefix(aOwn.id) && $0.contains("this device") }, "\(table)")
        let cNode = try await c.client().status().node
        let cToken = try #require(try relay.tokens(owner).first { $0.device.contains(cNode) })
        let revoked = try ctl.run(["relay", "revoke", cToken.id])
        #expect(revoked.status == 0 && revoked.stdout.contains("revoked token \(cToken.id)"), "\(revoked)")
        let listed = try ctl.run(["relay", "devices", "--json"]).json()
        #expect(listed["devices"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [aOwn.id], "\(listed)")
        let own = try ctl.run(["relay", "revoke", aOwn.id])
        #expect(own.status != 0 && own.stderr.contains("this device's own"), "\(own)")
    }

    @Test(arguments: RelaySyncTests.backends) func aRelayKilledMidSyncLosesNothing(_ storage: String) async throws {
        let (relay, devices, _) = try await Self.setUp(2, storage: storage)
        let (a, b) = (devices[0], devices[1])
        var items: [PutItem] = []
        for i in 0..<5000 { items.append(PutItem(entity: "note", id: "k\(i)", payload: ["i": .int(Int64(i))])) }
        for chunk in stride(from: 0, to: items.count, by: 1000) { _ = try await a.client().putMany(Array(items[chunk..<(chunk + 1000)])) }
        #expect(try await eventually(.seconds(30)) { try await b.client().status().records > 0 })
        relay.crash()
        try await Task.sleep(for: .milliseconds(300))
        try relay.start()
        try await a.client().syncNow()
        try await b.client().syncNow()
        #expect(try await eventually(.seconds(120)) { try await b.records().count == 5000 })
        #expect(try await Self.converged(devices))
    }

    @Test(arguments: RelaySyncTests.backends) func aQuotaReachedStopsPushesUntilTheRelayCopyIsDeleted(_ storage: String) async throws {
        let (relay, devices, owner) = try await Self.setUp(2, storage: storage)
        let (a, b) = (devices[0], devices[1])
        _ = try await a.client().put(entity: "note", id: "small", payload: ["v": 1])
        #expect(try await eventually(.seconds(30)) { try await b.records()["small"] != nil })
        let used = try #require(try await a.client().relayUsage().figures["bytes"])
        #expect(try relay.admin(["set-quota", owner, String(used + 2000)]).status == 0)
        var items: [PutItem] = []
        for i in 0..<200 { items.append(PutItem(entity: "note", id: "big\(i)", payload: ["pad": .string(String(repeating: "z", count: 500))])) }
        _ = try await a.client().putMany(items)
        #expect(try await eventually(.seconds(30)) { try await a.transport("relay")?.lastErrorKind == "quota" })
        // What fits the 2,000 bytes left goes (a few records of about 600 bytes sealed); the
        // outbox says why the rest does not: every waiting entry is held by the relay's quota.
        #expect(try await eventually(.seconds(30)) { try await b.records().count > 1 })
        let held = try await a.client().outbox(errorsOnly: true)
        #expect((190..<200).contains(held.count), "\(held.count) held entries")
        #expect(try await a.client().status().outbox == held.count)
        #expect(try await eventually(.seconds(30)) { try await b.records().count == 201 - held.count })
        #expect(held.allSatisfy { $0.deliveries.contains { $0.transport == "relay" && ($0.held ?? "").contains("quota") } })
        // ferryctl's table cuts the text; below it the whole text says what to do, once.
        let ctlHeld = try CtlRunner(socket: a.harness.socketPath).run(["outbox", "--errors"])
        #expect(ctlHeld.status == 0 && ctlHeld.stdout.components(separatedBy: "relay: held: ").count == 2
                && ctlHeld.stdout.contains("ferry-relay admin set-quota") && ctlHeld.stdout.hasSuffix("\n"), "\(ctlHeld)")
        let summary = try CtlRunner(socket: a.harness.socketPath).run(["status"])
        #expect(summary.stdout.contains("\(held.count) pending, 0 rejected, held by relay"), "\(summary)")
        // The user removes the relay's copy; the next round (SyncNow ends the backoff) fits.
        let ctl = try CtlRunner(socket: a.harness.socketPath)
        let refused = try ctl.run(["relay", "delete-copy"])
        #expect(refused.status == 2 && refused.stderr.contains("--yes"), "\(refused)")
        #expect(try ctl.run(["relay", "delete-copy", "--yes"]).status == 0)
        #expect(try relay.admin(["set-quota", owner, "default"]).status == 0)
        try await a.client().syncNow()
        #expect(try await eventually(.seconds(60)) { try await b.records().count == 201 })
        let status = try ctl.run(["relay", "status", "--json"]).json()
        #expect(status["events"]?.intValue ?? 0 >= 200)
        // The delete refused every earlier cursor, so the devices started over and filled the
        // relay again: a device paired after it gets everything, not only what came after.
        #expect(try await eventually(.seconds(60)) {
            (try ctl.run(["relay", "status", "--json"]).json()["events"]?.intValue ?? 0) >= 201
        })
        let c = try SyncDevice("c")
        try c.start()
        try await c.joinOwner(of: a)
        let (code, _) = try await a.client().relayPairingCode()
        _ = try await c.client().addTransport(name: "relay", kind: "relay", location: relay.url, code: code)
        #expect(try await eventually(.seconds(60)) { try await c.records().count == 201 })
        #expect(try await c.records() == a.records())
    }

    /// A relay over its quota still takes deletions: they go ahead of the refused backlog, at
    /// once after the user deletes, free room there and reach the other devices; the backlog
    /// waits, and goes once the quota allows it, with nothing sent twice.
    @Test(arguments: RelaySyncTests.backends) func deletionsGoAheadOfABacklogTheQuotaHolds(_ storage: String) async throws {
        let (relay, devices, owner) = try await Self.setUp(2, storage: storage)
        let (a, b) = (devices[0], devices[1])
        let pad = String(repeating: "o", count: 1500)
        _ = try await a.client().putMany((0..<10).map { PutItem(entity: "note", id: "old\($0)", payload: ["pad": .string(pad)]) })
        #expect(try await eventually(.seconds(30)) { try await b.records().count == 10 })
        let used = try #require(try await a.client().relayUsage().figures["bytes"])
        #expect(try relay.admin(["set-quota", owner, String(used + 2000)]).status == 0)
        _ = try await a.client().putMany((0..<200).map {
            PutItem(entity: "note", id: "big\($0)", payload: ["pad": .string(String(repeating: "z", count: 500))])
        })
        #expect(try await eventually(.seconds(30)) { try await a.transport("relay")?.lastErrorKind == "quota" })
        // The user deletes to make room: the deletions reach B while the backlog is held.
        for i in 0..<5 { _ = try await a.client().delete(entity: "note", id: "old\(i)") }
        #expect(try await eventually(.seconds(30)) {
            try await b.records().values.filter(\.deleted).count == 5
        })
        // The room they freed takes what of the backlog fits (about 7 KB: some of the 200), the
        // rest stays held, and the relay stays within the quota.
        #expect(try await eventually(.seconds(30)) {
            let pending = try await a.client().status().outbox
            let onB = try await b.records().count
            return pending > 0 && pending < 200 && onB == 210 - pending
        }, "\(a.logTail)")
        let usage = try await a.client().relayUsage().figures
        #expect((usage["bytes"] ?? 0) + (usage["blobBytes"] ?? 0) <= used + 2000, "\(usage)")
        #expect(try await a.transport("relay")?.lastErrorKind == "quota")
        // The quota allows the backlog: everything converges, each record once on the relay.
        #expect(try relay.admin(["set-quota", owner, "default"]).status == 0)
        try await a.client().syncNow()
        #expect(try await eventually(.seconds(60)) { try await b.records().count == 210 })
        #expect(try await Self.converged(devices))
        #expect(try await a.client().status().outbox == 0)
        #expect(try await a.client().relayUsage().figures["events"] == 210)
    }

    /// `transport add --token` asks the relay: a token it refuses (unknown, or another owner's)
    /// is refused at once, with nothing added; a relay that cannot be reached does not stop it.
    @Test func aTokenTheRelayRefusesIsRefusedWhenTheTransportIsAdded() async throws {
        let relay = try RelayHarness()
        try relay.start()
        let a = try SyncDevice("a")
        try a.start()
        let client = try a.client()
        let owner = try #require(try await client.spaces().first { $0.name == "private" }?.owner)
        let (token, _) = try relay.createOwner(owner)
        let (otherToken, _) = try relay.createOwner(String(repeating: "ab", count: 16))
        for (bad, why) in [("not-a-token-\(UUID().uuidString)", "unknown"), (otherToken, "another owner's")] {
            var refusal: FerryClientError?
            do {
                _ = try await client.addTransport(name: "relay", kind: "relay", location: relay.url, token: bad)
            } catch {
                refusal = error
            }
            let text = refusal.map { "\($0)" } ?? "\(why) token was accepted"
            #expect(text.contains("refused the token"), "\(text)")
        }
        #expect(try await client.transports().isEmpty)
        _ = try await client.addTransport(name: "relay", kind: "relay", location: relay.url, token: token)
        // Offline: the relay is stopped; the add goes ahead (the transport shows the problem).
        _ = relay.stop()
        _ = try await client.addTransport(name: "relay", kind: "relay", location: relay.url, token: otherToken)
        #expect(try await client.transports().count == 1)
    }

    /// Restoring another owner's phrase into a space that syncs through a relay names the relay
    /// transports to pair again (their tokens are the previous owner's); restoring the owner the
    /// space has already names none.
    @Test func restoringAnotherOwnerNamesTheRelaysToPairAgain() async throws {
        let relay = try RelayHarness()
        try relay.start()
        let a = try SyncDevice("a"), other = try SyncDevice("other")
        try a.start()
        try other.start()
        let client = try a.client()
        let owner = try #require(try await client.spaces().first { $0.name == "private" }?.owner)
        let (token, _) = try relay.createOwner(owner)
        _ = try await client.addTransport(name: "relay", kind: "relay", location: relay.url, token: token)
        let phrase = try await other.client().ownerPhrase().phrase
        let moved = try await client.restoreOwnerReport(phrase: phrase)
        #expect(moved.owner != owner && moved.relaysToPairAgain == ["relay"], "\(moved)")
        let again = try await client.restoreOwnerReport(phrase: phrase)
        #expect(again.owner == moved.owner && again.relaysToPairAgain.isEmpty, "\(again)")
    }

    /// A relay with a small MaxBodyBytes: the batch it refuses with 413 `too_large` is pushed in
    /// halves, so every record that fits arrives; the one record too large on its own is rejected
    /// for the relay (`ferryctl outbox --errors` shows it, with what to do) instead of holding the
    /// rest back, and a later, smaller version of it goes through. (Refused before the relay's
    /// storage is touched, so one backend is enough.)
    @Test func aRecordTooLargeForTheRelayIsRejectedAndTheRestArrive() async throws {
        let (relay, devices, _) = try await Self.setUp(2, storage: "sqlite", relayConfig: "MaxBodyBytes=16384")
        let (a, b) = (devices[0], devices[1])
        var items: [PutItem] = []
        for i in 0..<100 { items.append(PutItem(entity: "note", id: "n\(i)", payload: ["i": .int(Int64(i)), "pad": .string(String(repeating: "p", count: 40))])) }
        items.insert(PutItem(entity: "note", id: "big", payload: ["pad": .string(String(repeating: "z", count: 20_000))]), at: 50)
        _ = try await a.client().putMany(items)
        #expect(try await eventually(.seconds(30)) { try await b.records().count == 100 }, "\(a.logTail)\n--- relay:\n\(relay.log)")
        #expect(try await b.records()["big"] == nil)
        // The outcomes are recorded once the last part of the batch is answered.
        #expect(try await eventually(.seconds(30)) { try await !a.client().outbox(errorsOnly: true).isEmpty })
        let errors = try await a.client().outbox(errorsOnly: true)
        #expect(errors.map(\.id) == ["big"], "\(errors)")
        let refusal = try #require(errors.first?.deliveries.first { $0.transport == "relay" }?.error)
        #expect(refusal.hasPrefix("too large for relay: ") && refusal.contains("too_large") && refusal.contains("MaxBodyBytes"), "\(refusal)")
        let ctl = try CtlRunner(socket: a.harness.socketPath)
        let listed = try ctl.run(["outbox", "--errors"])
        #expect(listed.status == 0 && listed.stdout.contains("big") && listed.stdout.contains("too large for relay"), "\(listed)")
        // Refused records are the records' own problem, not the relay's.
        #expect(try await a.transport("relay")?.problem == nil)
        _ = try await a.client().put(entity: "note", id: "big", payload: ["pad": "small now"])
        #expect(try await eventually(.seconds(30)) { try await b.records()["big"]?.payload?.contains("small now") == true })
        #expect(try await eventually(.seconds(30)) { try await a.client().outbox().isEmpty })
        _ = relay   // running until here
    }

    /// The blob of an attachment nothing references any more leaves the relay, and the owner's
    /// usage, after the devices' BlobRetentionSeconds (here 0) once the relay's
    /// BlobDeleteGraceSeconds (here 2) since its upload passed. Attached again on the other
    /// device, it goes up again and stays.
    @Test(arguments: RelaySyncTests.backends) func theBlobOfAnAttachmentNothingReferencesLeavesTheRelay(_ storage: String) async throws {
        let (relay, devices, _) = try await Self.setUp(2, storage: storage, relayConfig: "BlobDeleteGraceSeconds=2", blobRetentionSeconds: 0)
        let (a, b) = (devices[0], devices[1])
        let bytes = (0..<30_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let photo = try await a.client().putAttachment(data: bytes)
        _ = try await a.client().put(entity: "note", id: "photo", payload: [:], attachments: [photo.sha256])
        #expect(try await eventually(.seconds(30)) { (try? await b.client().getAttachment(sha256: photo.sha256)) != nil })
        #expect(try await a.client().relayUsage().figures["blobs"] == 1)
        _ = try await a.client().delete(entity: "note", id: "photo")
        #expect(try await eventually(.seconds(30)) { try await b.records()["photo"]?.deleted == true })
        #expect(try await eventually(.seconds(30)) { try await a.client().relayUsage().figures["blobs"] == 0 },
                "\(a.logTail)\n--- relay:\n\(relay.log)")
        #expect(try await a.client().relayUsage().figures["blobBytes"] == 0)
        // b still has the bytes (AttachmentGraceSeconds): attached again there, they go up again.
        _ = try await b.client().put(entity: "note", id: "again", payload: [:], attachments: [photo.sha256])
        #expect(try await eventually(.seconds(30)) { try await a.records()["again"] != nil })
        #expect(try await a.client().relayUsage().figures["blobs"] == 1)
        try await Task.sleep(for: .seconds(4))
        #expect(try await a.client().relayUsage().figures["blobs"] == 1)
        _ = relay   // running until here
    }

    /// A blob gone from the relay (another device removed it, or a device passed its record on
    /// without having the bytes) is put back by a device that references it and has its bytes,
    /// at its next blob check (SyncNow here).
    @Test func aBlobGoneFromTheRelayIsPutBackByADeviceThatHasItsBytes() async throws {
        let (relay, devices, owner) = try await Self.setUp(2, storage: "sqlite", relayConfig: "BlobDeleteGraceSeconds=0")
        let (a, b) = (devices[0], devices[1])
        let photo = try await a.client().putAttachment(data: (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 3) })
        _ = try await a.client().put(entity: "note", id: "photo", payload: [:], attachments: [photo.sha256])
        #expect(try await eventually(.seconds(30)) { (try? await b.client().getAttachment(sha256: photo.sha256)) != nil })
        // Removed by a third device of the owner (paired with a code as any device is).
        let (code, _) = try await a.client().relayPairingCode()
        let body = #"{"code":"\#(code)","device":"remover"}"#
        let paired = try RelayHarness.rawHTTP(port: relay.port, "POST /v1/pair HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body)
        let token = try #require(paired.split(separator: "\"").drop { $0 != "token" }.dropFirst(2).first.map(String.init), "\(paired)")
        let key = try runCommand(Executables.python, ["-c", """
            import sqlite3, sys
            print(sqlite3.connect(sys.argv[1]).execute("SELECT key FROM blobs").fetchone()[0])
            """, relay.root + "/state/relay.db"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let removed = try RelayHarness.rawHTTP(port: relay.port, "DELETE /v1/owners/\(owner)/blobs/\(key) HTTP/1.1\r\nHost: x\r\n"
            + "Authorization: Bearer \(token)\r\nConnection: close\r\n\r\n")
        #expect(removed.hasPrefix("HTTP/1.1 204"), "\(removed)")
        #expect(try await a.client().relayUsage().figures["blobs"] == 0)
        try await a.client().syncNow()
        #expect(try await eventually(.seconds(30)) { try await a.client().relayUsage().figures["blobs"] == 1 }, "\(a.logTail)")
        #expect(a.harness.log.contains("were gone from the transport"), "\(a.logTail)")
        _ = relay   // running until here
    }

    /// A relay whose MaxWaitSeconds (1 here) is shorter than the wait devices ask for (their
    /// poll interval, 2 s here; 25 s by default) cuts their long-polls short instead of
    /// refusing them: the devices stay out of backoff and hear of a push at once. Before,
    /// every waiting pull got 400 bad_wait, and a change waited for the backoff.
    @Test func aRelayWithAShortMaxWaitStillWakesDevicesAtOnce() async throws {
        let (relay, devices, _) = try await Self.setUp(2, storage: "sqlite", relayConfig: "MaxWaitSeconds=1")
        let (a, b) = (devices[0], devices[1])
        try await Task.sleep(for: .seconds(5))   // a few cut-short long-polls
        let transport = try #require(try await b.client().transports().first)
        #expect(transport.problem == nil && transport.lastError == nil, "\(transport)")
        _ = try await a.client().put(entity: "note", id: "quick", payload: ["v": 1])
        #expect(try await eventually(.seconds(10)) { try await b.records()["quick"] != nil })
        _ = relay   // running until here
    }

    /// An attachment over the relay's MaxBlobBytes rejects its record for the relay, with
    /// what to do, and every other record of the batch arrives.
    @Test func anAttachmentTooLargeForTheRelayRejectsItsRecordAndTheRestArrive() async throws {
        let (relay, devices, _) = try await Self.setUp(2, storage: "sqlite", relayConfig: "MaxBlobBytes=4096")
        let (a, b) = (devices[0], devices[1])
        let photo = try await a.client().putAttachment(data: [UInt8](repeating: 42, count: 20_000))
        var items = (0..<50).map { PutItem(entity: "note", id: "n\($0)", payload: ["i": .int(Int64($0))]) }
        items.insert(PutItem(entity: "note", id: "photo", payload: [:], attachments: [photo.sha256]), at: 25)
        _ = try await a.client().putMany(items)
        #expect(try await eventually(.seconds(30)) { try await b.records().count == 50 }, "\(a.logTail)\n--- relay:\n\(relay.log)")
        #expect(try await b.records()["photo"] == nil)
        #expect(try await eventually(.seconds(30)) { try await !a.client().outbox(errorsOnly: true).isEmpty })
        let errors = try await a.client().outbox(errorsOnly: true)
        #expect(errors.map(\.id) == ["photo"], "\(errors)")
        let refusal = try #require(errors.first?.deliveries.first { $0.transport == "relay" }?.error)
        #expect(refusal.contains("is too large for relay") && refusal.contains("MaxBlobBytes"), "\(refusal)")
        #expect(try await a.transport("relay")?.problem == nil)
        _ = relay   // running until here
    }

    @Test(arguments: RelaySyncTests.backends) func compactionWhileADeviceIsOfflineSkipsNothingThatSurvives(_ storage: String) async throws {
        let (relay, devices, owner) = try await Self.setUp(2, storage: storage)
        let (a, b) = (devices[0], devices[1])
        for i in 0..<50 { _ = try await a.client().put(entity: "note", id: "r\(i)", payload: ["v": 0]) }
        #expect(try await eventually(.seconds(30)) { try await b.records().count == 50 })
        #expect(b.harness.stop() == 0)
        for round in 1...5 {
            var items: [PutItem] = []
            for i in 0..<50 { items.append(PutItem(entity: "note", id: "r\(i)", payload: ["v": .int(Int64(round))])) }
            _ = try await a.client().putMany(items)
        }
        for i in 0..<10 { _ = try await a.client().delete(entity: "note", id: "r\(i)") }
        #expect(try await eventually(.seconds(30)) { try await a.client().outbox(limit: 1).isEmpty })
        // The relay kept one event per record, not the history.
        let usage = try await a.client().relayUsage().figures
        #expect(usage["events"] == 50, "events kept: \(usage)")
        _ = owner
        _ = relay
        try b.start()
        #expect(try await eventually(.seconds(60)) { try await b.records() == a.records() })
        let final = try await b.records()
        #expect(final["r20"]?.payload?.contains("5") == true && final["r3"]?.deleted == true)
    }
}
