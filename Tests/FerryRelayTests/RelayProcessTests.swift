import FerryAPI
import FerryRelay
import FerrySQLite
import FerrySync
import FerryModel
import FerryTestSupport
import Foundation
import Testing

/// A real `ferry-relay serve` over HTTP on loopback, on each storage backend. Serialized:
/// several tests measure time.
@Suite(.serialized) struct RelayProcessTests {
    func hex(_ o: OwnerID) -> String { o.description }

    /// A started relay on `backend` with one owner: its token and its API path.
    func relayWithOwner(_ backend: TestBackend, config: String = "") throws -> (RelayHarness, OwnerID, token: String, base: String) {
        let relay = try RelayHarness(backend: backend, extraConfig: config)
        try relay.start()
        let owner = TestEnvelopes.owner()
        return (relay, owner, try relay.createOwner(hex(owner)), "/v1/owners/\(hex(owner))")
    }

    func pushBody(_ envelopes: [Envelope]) -> [UInt8] {
        Array(("{\"events\":[" + envelopes.map { "\"\(Base64.encode($0.encoded))\"" }.joined(separator: ",") + "]}").utf8)
    }

    func pushBody(strings: [String]) -> [UInt8] {
        Array(("{\"events\":[" + strings.map { "\"\($0)\"" }.joined(separator: ",") + "]}").utf8)
    }

    func statuses(_ r: HTTPTestClient.Response) -> [String] {
        (r.json["results"] as? [[String: Any]] ?? []).map { $0["status"] as? String ?? "?" }
    }

    func pulled(_ r: HTTPTestClient.Response) -> [[UInt8]] {
        (r.json["events"] as? [String] ?? []).map { Base64.decode($0.utf8) ?? [] }
    }

    @Test(arguments: TestBackend.allCases) func pushPullCursorsAndLongPoll(_ backend: TestBackend) throws {
        let (relay, owner, token, base) = try relayWithOwner(backend)

        // An owner with nothing yet: an empty page.
        let empty = try relay.call("GET", base + "/events", token: token)
        #expect(empty.status == 200 && pulled(empty).isEmpty && empty.json["more"] as? Bool == false)

        let envelopes = (0..<3).map { TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 1000 + Int64($0)) }
        let wrongOwner = TestEnvelopes.make(owner: TestEnvelopes.owner(), stream: TestEnvelopes.stream(), millis: 5)
        let push = try relay.call("POST", base + "/events", token: token, body: pushBody(strings:
            envelopes.map { Base64.encode($0.encoded) } + [Base64.encode(wrongOwner.encoded), "bm90IGFuIGVudmVsb3Bl", "%%%"]))
        #expect(push.status == 200)
        #expect(statuses(push) == ["accepted", "accepted", "accepted", "rejected", "rejected", "rejected"])
        let results = push.json["results"] as? [[String: Any]] ?? []
        #expect(results.first?["event"] as? String == envelopes[0].header.event.description)
        let replay = try relay.call("POST", base + "/events", token: token, body: pushBody(Array(envelopes[0..<2])))
        #expect(statuses(replay) == ["duplicate", "duplicate"])

        let page1 = try relay.call("GET", base + "/events?limit=2", token: token)
        #expect(pulled(page1) == envelopes[0..<2].map(\.encoded) && page1.json["more"] as? Bool == true)
        let cursor = try #require(page1.json["cursor"] as? String)
        let page2 = try relay.call("GET", base + "/events?after=\(cursor)&limit=2", token: token)
        #expect(pulled(page2) == [envelopes[2].encoded] && page2.json["more"] as? Bool == false)
        let end = try #require(page2.json["cursor"] as? String)

        // A long-poll with nothing new times out to an empty page with the same cursor.
        let t0 = Date()
        let idle = try relay.call("GET", base + "/events?after=\(end)&wait=1", token: token)
        let waited = Date().timeIntervalSince(t0)
        #expect(idle.status == 200 && pulled(idle).isEmpty && idle.json["cursor"] as? String == end)
        #expect(waited >= 0.9 && waited < 3, "waited \(waited) s")

        // A push from another connection wakes a waiting pull at once.
        let box = ResponseBox()
        let thread = Thread {
            box.set(Result { try HTTPTestClient.call(port: relay.port, "GET", base + "/events?after=\(end)&wait=20", token: token) })
        }
        thread.start()
        Thread.sleep(forTimeInterval: 0.5)
        let fresh = TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 9000)
        let pushedAt = Date()
        #expect(try relay.call("POST", base + "/events", token: token, body: pushBody([fresh])).status == 200)
        let woke = try box.wait(seconds: 10)
        let latency = box.doneAt!.timeIntervalSince(pushedAt)
        #expect(pulled(woke) == [fresh.encoded])
        #expect(latency < 0.5, "the waiting pull answered \(latency) s after the push")

        let wait = try relay.call("GET", base + "/events?wait=3601", token: token)
        #expect(wait.status == 400 && wait.json["error"] as? String == "bad_wait")
        let bad = try relay.call("GET", base + "/events?after=nope", token: token)
        #expect(bad.status == 400 && bad.json["error"] as? String == "bad_cursor")

        let metrics = try relay.call("GET", "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.text.contains("ferry_relay_requests_total{route=\"events_push\",status=\"200\"} 3"))
        #expect(metrics.text.contains("ferry_relay_events_stored 4"))
        #expect(metrics.text.contains("ferry_relay_long_pollers 0"))
        #expect(metrics.text.contains("ferry_relay_request_duration_seconds_bucket{route=\"events_pull\""))
        let health = try relay.call("GET", "/healthz")
        #expect(health.status == 200 && health.text == "ok\n")
        #expect(try relay.call("GET", "/readyz").status == 200)
        #expect(relay.stop() == 0)
        #expect(!relay.log.contains(token))
    }

    /// A cursor beyond the newest the relay gave the owner (it was restored from an older backup)
    /// is refused with 409 lost_data, at once even when the pull would wait, and so is every
    /// cursor handed out before; a pull already waiting with one is answered so at once. Before
    /// that, every cursor the relay handed out, and none, gets a page. Deleting the relay copy
    /// refuses every cursor handed out before it the same way. ferryd's relay transport reports
    /// it as the host having lost data.
    @Test(arguments: TestBackend.allCases) func aCursorNeverHandedOutIsRefusedWithEveryEarlierOne(_ backend: TestBackend) async throws {
        let (relay, owner, token, base) = try relayWithOwner(backend)
        func expectLost(_ query: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let t0 = Date()
            let r = try relay.call("GET", base + "/events?" + query, token: token)
            #expect(r.status == 409 && r.json["error"] as? String == "lost_data", "\(r.status) \(r.text)", sourceLocation: sourceLocation)
            #expect((r.json["message"] as? String ?? "").contains("backup"), sourceLocation: sourceLocation)
            #expect(Date().timeIntervalSince(t0) < 2, "answered only after waiting", sourceLocation: sourceLocation)
        }
        func expectPage(_ query: String, events: Int = 0, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
            let r = try relay.call("GET", base + "/events?" + query, token: token)
            #expect(r.status == 200 && pulled(r).count == events, "\(r.status) \(r.text)", sourceLocation: sourceLocation)
            return r.json["cursor"] as? String ?? "?"
        }
        #expect(try expectPage("") == "0")
        #expect(try expectPage("after=0&wait=0") == "0")
        let envelopes = (0..<3).map { TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 1000 + Int64($0)) }
        #expect(try relay.call("POST", base + "/events", token: token, body: pushBody(envelopes)).status == 200)
        #expect(try expectPage("after=1", events: 2) == "3")
        #expect(try expectPage("after=3") == "3")

        // A pull waiting after cursor 3 when a device shows the relay was restored is answered
        // at once: its cursor is refused too now.
        let box = ResponseBox()
        let thread = Thread {
            box.set(Result { try HTTPTestClient.call(port: relay.port, "GET", base + "/events?after=3&wait=20", token: token) })
        }
        thread.start()
        try await Task.sleep(for: .milliseconds(500))
        try expectLost("after=4&wait=5")
        let woke = try box.wait(seconds: 5)
        #expect(woke.status == 409 && woke.json["error"] as? String == "lost_data", "\(woke.status) \(woke.text)")
        try expectLost("after=3")
        try expectLost("after=1&wait=5")
        // A cursor no restore explains is a bad request: it starts nobody over (the next page
        // below is numbered as before it).
        let madeUp = try relay.call("GET", base + "/events?after=9223372036854775807", token: token)
        #expect(madeUp.status == 400 && madeUp.json["error"] as? String == "bad_cursor", "\(madeUp.status) \(madeUp.text)")
        // Starting over: no cursor reads the relay from the start, in a numbering past every
        // cursor refused, which holds.
        let again = try expectPage("", events: 3)
        #expect(Int64(again) ?? 0 > 1 << 32, "\(again)")
        let later = TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 5000)
        #expect(try relay.call("POST", base + "/events", token: token, body: pushBody([later])).status == 200)
        let start = try expectPage("", events: 4)
        #expect(Int64(start) ?? 0 > 1 << 32, "\(start)")
        #expect(try expectPage("after=\(start)&wait=0") == start)

        // ferryd's relay transport tells its engine the relay lost data, and only then.
        let transport = RelayTransport(name: "relay", url: URL(string: "http://127.0.0.1:\(relay.port)")!, owner: owner, token: token)
        let lost = await #expect(throws: TransportFailure.self) { _ = try await transport.pull(after: "3", limit: 10, wait: .seconds(5)) }
        #expect(lost?.kind == "host-lost-data" && lost?.message.contains("lost_data") == true, "\(String(describing: lost))")
        #expect(try await transport.pull(after: start, limit: 10, wait: .zero).cursor == start)
        await transport.close()

        // Deleting the relay copy refuses every cursor handed out before it; none still reads
        // (the now empty) relay, in a numbering past them.
        #expect(try relay.call("DELETE", base, token: token).status == 204)
        try expectLost("after=\(start)")
        #expect(try expectPage("") == "0")
        #expect(relay.stop() == 0)
        #expect(relay.log.contains("every cursor of the owner handed out so far is refused"))
    }

    /// A device can leave its own pushes out of its pulls; the cursor still moves past them,
    /// so nothing of another device's is skipped and nothing of its own comes back.
    @Test(arguments: TestBackend.allCases) func pullsCanSkipTheDevicesOwnEvents(_ backend: TestBackend) throws {
        let (relay, owner, token, base) = try relayWithOwner(backend)
        func from(_ device: UInt64, _ millis: Int64) -> Envelope {
            var e = TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: millis)
            e.header.device = NodeID(device)
            return e
        }
        let mine = [from(7, 1), from(7, 2), from(7, 5)]
        let theirs = [from(9, 3), from(9, 4)]
        #expect(try relay.call("POST", base + "/events", token: token, body: pushBody([mine[0], mine[1], theirs[0], theirs[1], mine[2]])).status == 200)
        let all = try relay.call("GET", base + "/events", token: token)
        let skipping = try relay.call("GET", base + "/events?skipDevice=0000000000000007", token: token)
        #expect(pulled(skipping) == theirs.map(\.encoded))
        #expect(skipping.json["cursor"] as? String == all.json["cursor"] as? String)
        // Pages: the limit counts what was read, so a page of only own events is empty, with
        // `more` and a cursor past them.
        let first = try relay.call("GET", base + "/events?skipDevice=0000000000000007&limit=2", token: token)
        #expect(pulled(first).isEmpty && first.json["more"] as? Bool == true)
        let cursor = try #require(first.json["cursor"] as? String)
        let second = try relay.call("GET", base + "/events?skipDevice=0000000000000007&limit=2&after=\(cursor)", token: token)
        #expect(pulled(second) == theirs.map(\.encoded))
        let bad = try relay.call("GET", base + "/events?skipDevice=7", token: token)
        #expect(bad.status == 400 && bad.json["error"] as? String == "bad_device")

        // A waiting pull that leaves out its device's events is not answered by that device's
        // pushes (it would only get an empty page back): it waits on for another device's.
        let end = try #require(second.json["cursor"] as? String)
        let box = ResponseBox()
        let thread = Thread {
            box.set(Result { try HTTPTestClient.call(port: relay.port, "GET", base + "/events?after=\(end)&wait=20&skipDevice=0000000000000007", token: token) })
        }
        thread.start()
        Thread.sleep(forTimeInterval: 0.5)
        let ownLater = [from(7, 10), from(7, 11)]
        #expect(try relay.call("POST", base + "/events", token: token, body: pushBody([ownLater[0]])).status == 200)
        #expect(try relay.call("POST", base + "/events", token: token, body: pushBody([ownLater[1]])).status == 200)
        Thread.sleep(forTimeInterval: 1)
        #expect(!box.isDone, "a pull was answered by its own device's push")
        let other = from(9, 12)
        #expect(try relay.call("POST", base + "/events", token: token, body: pushBody([other])).status == 200)
        let woke = try box.wait(seconds: 10)
        #expect(pulled(woke) == [other.encoded])
        // Its cursor is past the device's own pushes too.
        let after = try #require(woke.json["cursor"] as? String)
        #expect(pulled(try relay.call("GET", base + "/events?after=\(after)", token: token)).isEmpty)

        // At the deadline it answers an empty page past the device's own pushes.
        let t0 = Date()
        let idleBox = ResponseBox()
        let idleThread = Thread {
            idleBox.set(Result { try HTTPTestClient.call(port: relay.port, "GET", base + "/events?after=\(after)&wait=2&skipDevice=0000000000000007", token: token) })
        }
        idleThread.start()
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try relay.call("POST", base + "/events", token: token, body: pushBody([from(7, 13)])).status == 200)
        let idle = try idleBox.wait(seconds: 10)
        let waited = Date().timeIntervalSince(t0)
        #expect(pulled(idle).isEmpty && idle.json["cursor"] as? String != after)
        #expect(waited >= 1.9 && waited < 5, "waited \(waited) s")

        // Stopping the relay answers waiting pulls (an empty page) instead of dropping them,
        // with or without skipDevice, and after they were woken by their own device's push.
        let parked = (0..<3).map { _ in ResponseBox() }
        let last = try #require(idle.json["cursor"] as? String)
        for (k, box) in parked.enumerated() {
            let query = "/events?after=\(last)&wait=20" + (k == 0 ? "" : "&skipDevice=0000000000000007")
            Thread { box.set(Result { try HTTPTestClient.call(port: relay.port, "GET", base + query, token: token) }) }.start()
        }
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try relay.call("POST", base + "/events", token: token, body: pushBody([from(7, 14)])).status == 200)
        Thread.sleep(forTimeInterval: 0.3)
        #expect(!parked[1].isDone && !parked[2].isDone)
        // The pull that reads its device's events got the push at once.
        #expect(pulled(try parked[0].wait(seconds: 10)).count == 1)
        #expect(relay.stop() == 0)
        for box in parked[1...] {
            let answer = try box.wait(seconds: 10)
            #expect(answer.status == 200 && pulled(answer).isEmpty)
        }
    }

    @Test(arguments: TestBackend.allCases) func compactionAndTombstoneRetention(_ backend: TestBackend) throws {
        // About 0.9 s of retention; the sweeper runs every second.
        let (relay, owner, token, base) = try relayWithOwner(backend, config: "TombstoneRetentionDays=0.00001\n")
        let stream = TestEnvelopes.stream()
        let v1 = TestEnvelopes.make(owner: owner, stream: stream, millis: 1000)
        let a = TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 1000)
        _ = try relay.call("POST", base + "/events", token: token, body: pushBody([v1, a]))
        let before = try #require(try relay.call("GET", base + "/events?limit=1", token: token).json["cursor"] as? String)
        let v2 = TestEnvelopes.make(owner: owner, stream: stream, millis: 2000)
        let v3 = TestEnvelopes.make(owner: owner, stream: stream, millis: 3000)
        let b = TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 1000)
        let push = try relay.call("POST", base + "/events", token: token, body: pushBody([v3, v2, b]))
        #expect(statuses(push) == ["accepted", "accepted", "accepted"])
        #expect(pulled(try relay.call("GET", base + "/events", token: token)) == [a.encoded, v3.encoded, b.encoded])
        #expect(pulled(try relay.call("GET", base + "/events?after=\(before)", token: token)) == [a.encoded, v3.encoded, b.encoded])

        let tomb = TestEnvelopes.make(owner: owner, stream: stream, millis: 4000, deleted: true)
        _ = try relay.call("POST", base + "/events", token: token, body: pushBody([tomb]))
        #expect(pulled(try relay.call("GET", base + "/events", token: token)) == [a.encoded, b.encoded, tomb.encoded])
        var left: [[UInt8]] = []
        for _ in 0..<50 {
            Thread.sleep(forTimeInterval: 0.2)
            left = pulled(try relay.call("GET", base + "/events", token: token))
            if left.count == 2 { break }
        }
        #expect(left == [a.encoded, b.encoded])
        let info = try relay.call("GET", base, token: token)
        #expect(info.json["events"] as? Int == 2)
    }

    /// DELETE of a blob: kept (409 `blob_in_use`, Retry-After) within BlobDeleteGraceSeconds of
    /// a PUT or a HEAD, removed after it with its share of the usage (a GET does not count),
    /// and a blob that is not there is removed already.
    @Test(arguments: TestBackend.allCases) func blobsAreRemovedOnceNotUsedWithinTheGrace(_ backend: TestBackend) throws {
        let (relay, _, token, base) = try relayWithOwner(backend, config: "BlobDeleteGraceSeconds=2\n")
        let key = String(repeating: "5a", count: 32)
        let blob = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        #expect(try relay.call("PUT", base + "/blobs/\(key)", token: token, body: blob).status == 201)
        let kept = try relay.call("DELETE", base + "/blobs/\(key)", token: token)
        #expect(kept.status == 409 && kept.json["error"] as? String == "blob_in_use" && kept.json["message"] is String)
        #expect(kept.headers["retry-after"].flatMap { Int($0) }.map { (1...2).contains($0) } == true, "\(kept.headers)")
        #expect(try relay.call("DELETE", base + "/blobs/\(key)").status == 401)
        #expect(try relay.call("DELETE", base + "/blobs/\(key.uppercased())", token: token).status == 400)
        Thread.sleep(forTimeInterval: 2.2)
        #expect(try relay.call("GET", base + "/blobs/\(key)", token: token).body == blob)
        #expect(try relay.call("DELETE", base + "/blobs/\(key)", token: token).status == 204)
        #expect(try relay.call("GET", base + "/blobs/\(key)", token: token).status == 404)
        #expect(try relay.call("HEAD", base + "/blobs/\(key)", token: token).status == 404)
        let info = try relay.call("GET", base, token: token)
        #expect(info.json["blobs"] as? Int == 0 && info.json["blobBytes"] as? Int == 0)
        #expect(try relay.call("DELETE", base + "/blobs/\(key)", token: token).status == 204)
        // Stored again with other bytes (a key names its content; here only the relay's view
        // counts): what comes back is the new upload, whole.
        let smaller = Array(blob.prefix(1000))
        #expect(try relay.call("PUT", base + "/blobs/\(key)", token: token, body: smaller).status == 201)
        Thread.sleep(forTimeInterval: 2.2)
        #expect(try relay.call("HEAD", base + "/blobs/\(key)", token: token).status == 200)
        #expect(try relay.call("DELETE", base + "/blobs/\(key)", token: token).status == 409)
        #expect(try relay.call("GET", base + "/blobs/\(key)", token: token).body == smaller)
        #expect(try relay.call("GET", base, token: token).json["blobBytes"] as? Int == 1000)
    }

    @Test(arguments: TestBackend.allCases) func quotaThenDeleteAndBlobs(_ backend: TestBackend) throws {
        let relay = try RelayHarness(backend: backend)
        try relay.start()
        let owner = TestEnvelopes.owner()
        let envelopes = (0..<4).map { TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 1000 + Int64($0), bodySize: 1000) }
        let size = envelopes[0].encoded.count
        let token = try relay.createOwner(hex(owner), quota: size * 3)
        let base = "/v1/owners/\(hex(owner))"
        #expect(try relay.call("POST", base + "/events", token: token, body: pushBody([envelopes[0]])).status == 200)
        let over = try relay.call("POST", base + "/events", token: token, body: pushBody(Array(envelopes[1...])))
        #expect(over.status == 413 && over.json["error"] as? String == "quota_exceeded")
        #expect(over.json["quotaBytes"] as? Int == size * 3 && over.json["usedBytes"] as? Int == size)
        #expect(pulled(try relay.call("GET", base + "/events", token: token)) == [envelopes[0].encoded])

        // Blobs: idempotent, streamed back, counted, bad keys refused.
        let key = String(repeating: "0f", count: 32)
        let blob = (0..<size).map { UInt8(truncatingIfNeeded: $0) }
        #expect(try relay.call("PUT", base + "/blobs/\(key)", token: token, body: blob).status == 201)
        #expect(try relay.call("PUT", base + "/blobs/\(key)", token: token, body: blob).status == 200)
        let got = try relay.call("GET", base + "/blobs/\(key)", token: token)
        #expect(got.status == 200 && got.body == blob)
        let head = try relay.call("HEAD", base + "/blobs/\(key)", token: token)
        #expect(head.status == 200 && head.headers["content-length"] == String(size) && head.body.isEmpty)
        #expect(try relay.call("GET", base + "/blobs/\(String(repeating: "1", count: 64))", token: token).status == 404)
        #expect(try relay.call("HEAD", base + "/blobs/\(String(repeating: "1", count: 64))", token: token).status == 404)
        for bad in ["../x", key.uppercased(), String(key.dropFirst()), "..%2F..%2Fetc%2Fpasswd", "\(key)/../\(key)"] {
            let r = try relay.call("PUT", base + "/blobs/\(bad)", token: token, body: [1, 2, 3])
            #expect(r.status == 400, "\(bad)")
        }
        // One event and one blob use two thirds of the quota: a blob a byte larger than a third does not fit.
        let full = try relay.call("PUT", base + "/blobs/\(String(repeating: "2", count: 64))", token: token, body: blob + [0])
        #expect(full.status == 413 && full.json["error"] as? String == "quota_exceeded")
        let info = try relay.call("GET", base, token: token)
        #expect(info.json["blobs"] as? Int == 1 && info.json["blobBytes"] as? Int == size && info.json["events"] as? Int == 1)
        #expect(info.json["quotaBytes"] as? Int == size * 3 && info.json["lastPushAt"] is Int)

        #expect(try relay.call("DELETE", base, token: token).status == 204)
        #expect(try relay.call("GET", base + "/blobs/\(key)", token: token).status == 404)
        let again = try relay.call("POST", base + "/events", token: token, body: pushBody(Array(envelopes[1...2])))
        #expect(statuses(again) == ["accepted", "accepted"])
        let after = try relay.call("GET", base, token: token)
        #expect(after.json["events"] as? Int == 2 && after.json["blobs"] as? Int == 0)

        // Malformed and oversized bodies: 400/413 and nothing stored.
        for garbage in ["{", "[]", "{\"events\":[1]}", "{\"events\":\"x\"}", "\u{0}"] {
            let r = try relay.call("POST", base + "/events", token: token, body: Array(garbage.utf8))
            #expect(r.status == 400 && r.json["message"] is String, "\(garbage)")
        }
        let huge = try relay.call("POST", base + "/events", token: token, body: [UInt8](repeating: 0x20, count: (8 << 20) + 1))
        #expect(huge.status == 413 && huge.json["error"] as? String == "too_large")
        #expect(try relay.call("GET", base, token: token).json["events"] as? Int == 2)
        #expect(try relay.call("GET", "/nope").status == 404)
        #expect(try relay.call("PATCH", base + "/events", token: token).status == 405)
    }

    /// Behind a trusted reverse proxy, failed pairing attempts count against the client the
    /// proxy names, not the proxy: one client guessing codes is held back, another pairs.
    @Test func pairingBehindATrustedProxyLimitsTheClientNotTheProxy() throws {
        let relay = try RelayHarness(extraConfig: "TrustedProxies=127.0.0.1\n")
        try relay.start()
        let owner = TestEnvelopes.owner()
        let token = try relay.createOwner(hex(owner))
        let guess = Array(#"{"code":"AAAA-AAAA-AAAA","device":"x"}"#.utf8)
        for _ in 0..<5 {
            #expect(try relay.call("POST", "/v1/pair", body: guess, headers: ["X-Forwarded-For: 203.0.113.9"]).status == 401)
        }
        #expect(try relay.call("POST", "/v1/pair", body: guess, headers: ["X-Forwarded-For: 203.0.113.9"]).status == 429)
        let code = try #require(try relay.call("POST", "/v1/owners/\(hex(owner))/pairing-codes", token: token).json["code"] as? String)
        let paired = try relay.call("POST", "/v1/pair", body: Array(#"{"code":"\#(code)","device":"phone"}"#.utf8),
                                    headers: ["X-Forwarded-For: 198.51.100.7"])
        #expect(paired.status == 200, "another client behind the same proxy pairs")
        #expect(relay.log.contains("remote=203.0.113.9"), "the log names the client: \(relay.log)")
    }

    @Test(arguments: TestBackend.allCases) func tokensPairingAndRights(_ backend: TestBackend) throws {
        let relay = try RelayHarness(backend: backend, extraConfig: "PairingCodeLifetimeSeconds=1\n")
        try relay.start()
        let owner = TestEnvelopes.owner(), other = TestEnvelopes.owner()
        let token = try relay.createOwner(hex(owner))
        let otherToken = try relay.createOwner(hex(other))
        let base = "/v1/owners/\(hex(owner))"

        #expect(try relay.call("GET", base + "/events").status == 401)
        #expect(try relay.call("GET", base + "/events", token: AccessToken().text).status == 401)
        #expect(try relay.call("GET", base + "/events", headers: ["Authorization: Basic eDp5"]).status == 401)
        let forbidden = try relay.call("GET", base + "/events", token: otherToken)
        #expect(forbidden.status == 403 && forbidden.json["error"] as? String == "forbidden")

        let made = try relay.call("POST", base + "/pairing-codes", token: token)
        #expect(made.status == 201)
        let code = try #require(made.json["code"] as? String)
        #expect(code.count == 14 && made.json["expiresAt"] is Int)
        let paired = try relay.call("POST", "/v1/pair", body: Array(#"{"code":"\#(code.lowercased())","device":"phone"}"#.utf8))
        #expect(paired.status == 200 && paired.json["owner"] as? String == hex(owner))
        let newToken = try #require(paired.json["token"] as? String)
        let newID = try #require(paired.json["tokenId"] as? String)
        #expect(try relay.call("GET", base + "/events", token: newToken).status == 200)
        #expect(try relay.call("POST", "/v1/pair", body: Array(#"{"code":"\#(code)","device":"again"}"#.utf8)).status == 401)
        let expiring = try #require(try relay.call("POST", base + "/pairing-codes", token: token).json["code"] as? String)
        Thread.sleep(forTimeInterval: 1.2)
        #expect(try relay.call("POST", "/v1/pair", body: Array(#"{"code":"\#(expiring)","device":"late"}"#.utf8)).status == 401)

        let list = try relay.call("GET", base + "/tokens", token: token)
        let tokens = list.json["tokens"] as? [[String: Any]] ?? []
        #expect(tokens.map { $0["device"] as? String } == ["test", "phone"])
        #expect(tokens.allSatisfy { $0["role"] as? String == "owner" && $0["createdAt"] is Int })
        // A pull waiting with the token when it is revoked is refused when a push wakes it,
        // not given the pushed events.
        let cursor = try #require(try relay.call("GET", base + "/events", token: newToken).json["cursor"] as? String)
        let box = ResponseBox()
        Thread {
            box.set(Result { try HTTPTestClient.call(port: relay.port, "GET", base + "/events?after=\(cursor)&wait=20", token: newToken) })
        }.start()
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try relay.call("DELETE", base + "/tokens/\(newID)", token: token).status == 204)
        let pushed = TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 7000)
        #expect(try relay.call("POST", base + "/events", token: token, body: pushBody([pushed])).status == 200)
        let woken = try box.wait(seconds: 10)
        #expect(woken.status == 401 && woken.json["events"] == nil, "\(woken.status) \(woken.json)")
        #expect(try relay.call("GET", base + "/events", token: newToken).status == 401)
        #expect(try relay.call("DELETE", base + "/tokens/\(newID)", token: token).status == 404)
        let (status, output) = try relay.admin(["tokens", hex(owner)])
        #expect(status == 0 && output.contains("test") && !output.contains(newID))
        // An unknown owner or token is "not found" (exit 3) with what to do, not a usage error.
        let stranger = String(repeating: "ab", count: 16)
        for command in [["tokens", stranger], ["set-quota", stranger, "1000"], ["revoke", hex(owner), newID]] {
            let (code, text) = try relay.admin(command)
            #expect(code == 3 && !text.contains("usage:") && (text.contains("create-owner") || text.contains("admin tokens")), "\(command): \(code) \(text)")
        }
        let (revokeCode, revokeText) = try relay.admin(["revoke", stranger, newID])
        #expect(revokeCode == 3 && revokeText.contains("no owner \(stranger) on this relay"), "\(revokeText)")
        // create-owner of an owner the relay has adds a token and says the quota stays.
        let (again, againText) = try relay.admin(["create-owner", "--owner", hex(owner), "--quota", "5000", "--device", "extra"])
        #expect(again == 0 && againText.contains("exists already") && againText.contains("quota is unchanged"), "\(againText)")
        #expect(try relay.call("GET", base, token: token).json["quotaBytes"] as? Int != 5000)

        // Guessing is rate limited: 2 failures so far, 3 more, then 429 with Retry-After.
        for _ in 0..<3 {
            #expect(try relay.call("POST", "/v1/pair", body: Array(#"{"code":"0000-0000-0000","device":"x"}"#.utf8)).status == 401)
        }
        let limited = try relay.call("POST", "/v1/pair", body: Array(#"{"code":"0000-0000-0000","device":"x"}"#.utf8))
        #expect(limited.status == 429 && Int(limited.headers["retry-after"] ?? "") != nil)
        #expect(try relay.call("POST", "/v1/pair", body: Array("{".utf8)).status == 429)
        #expect(!relay.log.contains(code) && !relay.log.contains(newToken))
    }

    /// Requests refused for their token (401, 403) and pushes refused over a quota (413) are in
    /// the log, naming the address, the owner and a token's id, never the token; repeats
    /// within a minute are counted, not logged again.
    @Test func refusalsAreLoggedOnceAMinuteWithoutTheirTokens() throws {
        let relay = try RelayHarness()
        try relay.start()
        let owner = TestEnvelopes.owner(), other = TestEnvelopes.owner(), small = TestEnvelopes.owner()
        let token = try relay.createOwner(hex(owner))
        let otherToken = try relay.createOwner(hex(other))
        let base = "/v1/owners/\(hex(owner))"
        let unknown = AccessToken().text
        for _ in 0..<3 { #expect(try relay.call("GET", base + "/events", token: unknown).status == 401) }
        #expect(try relay.call("GET", base + "/events").status == 401)
        #expect(try relay.call("GET", base + "/events", token: otherToken).status == 403)
        #expect(try relay.call("GET", base + "/events", token: otherToken).status == 403)
        let otherID = try #require((try relay.call("GET", "/v1/owners/\(hex(other))/tokens", token: otherToken)
            .json["tokens"] as? [[String: Any]])?.first?["id"] as? String)

        let envelopes = (0..<3).map { TestEnvelopes.make(owner: small, stream: TestEnvelopes.stream(), millis: 1000 + Int64($0), bodySize: 1000) }
        let smallToken = try relay.createOwner(hex(small), quota: envelopes[0].encoded.count)
        for envelope in envelopes[1...] {
            #expect(try relay.call("POST", "/v1/owners/\(hex(small))/events", token: smallToken, body: pushBody([envelopes[0], envelope])).status == 413)
        }
        // The refusals were answered before these reads; the log line is written before the answer.
        #expect(try relay.call("GET", base + "/events", token: token).status == 200)
        let lines = relay.log.split(separator: "\n")
        let unauthorized = lines.filter { $0.contains("refused a request") && $0.contains("with 401") }
        #expect(unauthorized.count == 1, "\(relay.log)")
        #expect(unauthorized.first.map { $0.contains("for owner \(hex(owner)) from 127.0.0.1") && $0.contains("the token is unknown or revoked") && $0.contains("remote=127.0.0.1") } == true,
                "\(unauthorized)")
        let forbidden = lines.filter { $0.contains("refused a request") && $0.contains("with 403") }
        #expect(forbidden.count == 1 && forbidden.first.map { $0.contains("another owner") && $0.contains("token_id=\(otherID)") } == true, "\(forbidden)")
        let quota = lines.filter { $0.contains("refused a push or upload") }
        #expect(quota.count == 1 && quota.first.map { $0.contains("owner \(hex(small))") && $0.contains("ferry-relay admin set-quota \(hex(small)) BYTES") } == true,
                "\(quota)")
        for secret in [token, otherToken, smallToken, unknown] { #expect(!relay.log.contains(secret)) }
    }

    /// `--version` and `version` print the version ferryd and ferryctl print, with no storage
    /// or config needed; an unknown command names itself.
    @Test func versionNeedsNothing() throws {
        for argument in ["--version", "version"] {
            let (status, output) = try Self.runRelay([argument])
            #expect(status == 0 && output == "ferry-relay \(FerryVersion.string)\n", "\(argument): \(status) \(output)")
        }
        let (status, output) = try Self.runRelay(["frobnicate"])
        #expect(status == 2 && output.contains("unknown command \"frobnicate\""), "\(status) \(output)")
        // Help after any command prints the usage and succeeds, without opening any storage.
        for arguments in [["--help"], ["admin", "--help"], ["serve", "-h"], ["admin", "create-owner", "--help"]] {
            let (status, output) = try Self.runRelay(arguments)
            #expect(status == 0 && output.hasPrefix("usage: ferry-relay serve"), "\(arguments): \(status) \(output)")
        }
    }

    /// `check-config` says what serve would find without changing anything: a missing state
    /// directory and database are reported, not made; an older database is reported with the
    /// migration serve would run, and left at its version; a database of a newer ferry-relay
    /// fails the check, and serve refuses it (left as it is) instead of serving from tables it
    /// does not know.
    @Test func checkConfigLooksAtTheStorageWithoutChangingIt() throws {
        let relay = try RelayHarness()
        let state = relay.root + "/state"
        var (status, output) = try Self.runRelay(["check-config", "--config", relay.configPath])
        #expect(status == 0 && output.contains("storage sqlite: \(state)/relay.db does not exist yet; serve creates it")
                    && output.contains("and the state directory \(state)"), "\(status) \(output)")
        #expect(!FileManager.default.fileExists(atPath: state))
        // admin makes the database a configuration names, and says so.
        let made = try relay.admin(["create-owner", "--owner", String(repeating: "ab", count: 16)])
        #expect(made.status == 0 && made.output.contains("made a new relay database at \(state)/relay.db"), "\(made.output)")
        let latest = try Self.userVersion(state + "/relay.db")
        (status, output) = try Self.runRelay(["check-config", "--config", relay.configPath])
        #expect(status == 0 && output.contains("relay.db, schema version \(latest) (current)"), "\(status) \(output)")
        #expect(!output.contains("warning"), "\(output)")
        // A grace too short for the devices' checks is warned about, not refused.
        let short = try RelayHarness(extraConfig: "BlobDeleteGraceSeconds=5\n")
        let (shortStatus, shortOutput) = try Self.runRelay(["check-config", "--config", short.configPath])
        #expect(shortStatus == 0 && shortOutput.contains("warning: BlobDeleteGraceSeconds=5 is under 900"), "\(shortOutput)")

        try Self.setUserVersion(state + "/relay.db", latest - 1)
        (status, output) = try Self.runRelay(["check-config", "--config", relay.configPath])
        #expect(status == 0 && output.contains("schema version \(latest - 1); serve migrates it to \(latest)"), "\(status) \(output)")
        #expect(try Self.userVersion(state + "/relay.db") == latest - 1)

        try Self.setUserVersion(state + "/relay.db", latest + 1)
        (status, output) = try Self.runRelay(["check-config", "--config", relay.configPath])
        #expect(status == 1 && output.contains("schema version \(latest + 1), newer than this ferry-relay knows (\(latest))"),
                "\(status) \(output)")
        (status, output) = try Self.runRelay(["serve", "--config", relay.configPath])
        #expect(status != 0 && output.contains("newer than this ferry-relay knows"), "\(status) \(output)")
        #expect(try Self.userVersion(state + "/relay.db") == latest + 1)

        try "not a database".write(toFile: state + "/relay.db", atomically: true, encoding: .utf8)
        (status, output) = try Self.runRelay(["check-config", "--config", relay.configPath])
        #expect(status == 1 && output.contains("reading \(state)/relay.db"), "\(status) \(output)")
    }

    static func userVersion(_ path: String) throws -> Int {
        Int(try Database(path: path).scalarInt("PRAGMA user_version") ?? -1)
    }

    static func setUserVersion(_ path: String, _ version: Int) throws {
        try Database(path: path).execute("PRAGMA user_version = \(version)")
    }

    /// Runs the built ferry-relay with `arguments`; its exit status and stdout and stderr together.
    static func runRelay(_ arguments: [String]) throws -> (Int32, String) {
        try ChildProcess.runToEnd(try BuiltExecutable.path("ferry-relay"), arguments)
    }

    /// admin with no configuration file and no database at the default place makes none
    /// there (its token would be refused by the relay that runs elsewhere): it says to pass
    /// the relay's --config.
    @Test(.enabled(if: !FileManager.default.fileExists(atPath: "/etc/ferry-relay/ferry-relay.conf")))
    func adminWithoutAConfigurationMakesNoDatabase() throws {
        let dir = TempDir("relay-default")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try BuiltExecutable.path("ferry-relay"))
        p.arguments = ["admin", "create-owner", "--owner", String(repeating: "cd", count: 16)]
        var environment = ProcessInfo.processInfo.environment
        environment["STATE_DIRECTORY"] = dir.path + "/state"   // the default StateDirectory=
        p.environment = environment
        let (status, output) = try ChildProcess.runToEnd(p)
        #expect(status == 1 && output.contains("no relay database at \(dir.path)/state/relay.db")
                && output.contains("pass the --config FILE the relay serves with") && !output.contains("token:"), "\(output)")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/state"))
    }

    /// A second relay on the state directory of a running one refuses to start and says why
    /// (it used to serve beside it, and with SQLite neither heard of the other's pushes).
    @Test(arguments: TestBackend.allCases) func aSecondRelayOnOneStateDirectoryRefusesToStart(_ backend: TestBackend) throws {
        let relay = try RelayHarness(backend: backend)
        try relay.start()
        let second = Process()
        second.executableURL = URL(fileURLWithPath: try BuiltExecutable.path("ferry-relay"))
        second.arguments = ["serve", "--config", relay.configPath]
        let output = Pipe()
        second.standardOutput = output
        second.standardError = output
        try second.run()
        let deadline = Date().addingTimeInterval(15)
        while second.isRunning && Date() < deadline { usleep(20_000) }
        if second.isRunning { second.terminate(); second.waitUntilExit() }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(second.terminationStatus == 1 && text.contains("another ferry-relay serves from the state directory \(relay.root)/state"),
                "\(second.terminationStatus) \(text)")
        #expect(try relay.call("GET", "/healthz").status == 200)
    }

    @Test func aSlowClientDoesNotBlockOthersAndIdleOnesAreClosed() throws {
        let relay = try RelayHarness(extraConfig: "ConnectionTimeoutSeconds=2\nThreads=1\n")
        try relay.start()
        let slow = try HTTPTestClient(port: relay.port)
        let request = HTTPTestClient.request("GET", "/healthz")
        let sender = Thread {
            for byte in request.prefix(10) {
                slow.send([byte])
                Thread.sleep(forTimeInterval: 0.3)
            }
        }
        sender.start()
        for _ in 0..<5 {
            let t0 = Date()
            #expect(try relay.call("GET", "/healthz").status == 200)
            #expect(Date().timeIntervalSince(t0) < 0.5)
            Thread.sleep(forTimeInterval: 0.2)
        }
        // An idle connection is closed after ConnectionTimeoutSeconds.
        let idle = try HTTPTestClient(port: relay.port)
        let t0 = Date()
        var byte: UInt8 = 0
        let n = recv(idle.fd, &byte, 1, 0)
        #expect(n <= 0)
        let closedAfter = Date().timeIntervalSince(t0)
        #expect(closedAfter > 1.5 && closedAfter < 6, "closed after \(closedAfter) s")
    }

    /// A stopped relay (SQLite) leaves every push in its database file: it empties the
    /// write-ahead log as it stops, so a copy of relay.db alone, without its -wal, as a backup of
    /// a stopped relay's directory takes it, holds every event.
    @Test func aStoppedRelayLeavesEveryPushInTheDatabaseFile() throws {
        let relay = try RelayHarness(backend: .sqlite)
        try relay.start()
        let owner = TestEnvelopes.owner()
        let token = try relay.createOwner(hex(owner))
        let batch = (0..<30).map { TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: Int64(1000 + $0), bodySize: 200) }
        let pushed = try relay.call("POST", "/v1/owners/\(hex(owner))/events", token: token, body: pushBody(batch))
        #expect(statuses(pushed) == Array(repeating: "accepted", count: 30))
        #expect(relay.stop() == 0)
        let file = relay.root + "/state/relay.db"
        #expect(FileSize.of(file + "-wal") == 0, "the write-ahead log holds \(FileSize.of(file + "-wal")) bytes")
        let copy = relay.root + "/copy.db"
        try FileManager.default.copyItem(atPath: file, toPath: copy)
        let db = try Database(path: copy)
        #expect(try db.scalarInt("SELECT count(*) FROM events") == 30)
        #expect(!relay.log.contains("could not be emptied"), "\(relay.log)")
    }

    @Test(arguments: TestBackend.allCases) func aCrashMidPushStoresAllOrNothing(_ backend: TestBackend) throws {
        let (relay, owner, token, base) = try relayWithOwner(backend)
        var stored = 0
        for (round, delay) in [0.002, 0.01, 0.03, 0.08, 0.2].enumerated() {
            let batch = (0..<400).map { i in
                TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: Int64(round * 1000 + i), bodySize: 12_000)
            }
            let body = pushBody(batch)
            let client = try HTTPTestClient(port: relay.port)
            let sender = Thread { client.send(HTTPTestClient.request("POST", base + "/events", token: token, body: body)) }
            sender.start()
            Thread.sleep(forTimeInterval: delay)
            relay.crash()
            try relay.start()
            let info = try relay.call("GET", base, token: token)
            let events = try #require(info.json["events"] as? Int)
            #expect(events == stored || events == stored + 400, "round \(round): \(events) events after a crash")
            let all = pulled(try relay.call("GET", base + "/events?limit=1000", token: token))
            #expect(all.count == events)
            stored = events
        }
    }
}

/// Hands a result from a helper thread to the test.
final class ResponseBox: @unchecked Sendable {
    // @unchecked: `result` and `at` are only touched with `lock` held; `done` is signalled once.
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var result: Result<HTTPTestClient.Response, Error>?
    private var at: Date?

    func set(_ r: Result<HTTPTestClient.Response, Error>) {
        lock.lock()
        result = r
        at = Date()
        lock.unlock()
        done.signal()
    }

    /// When the response came, nil before.
    var doneAt: Date? { lock.lock(); defer { lock.unlock() }; return at }

    /// Whether the response came.
    var isDone: Bool { doneAt != nil }

    func wait(seconds: Double) throws -> HTTPTestClient.Response {
        guard done.wait(timeout: .now() + seconds) == .success else {
            throw HTTPTestClient.Failure(description: "no response within \(seconds) s")
        }
        lock.lock(); defer { lock.unlock() }
        return try result!.get()
    }
}
