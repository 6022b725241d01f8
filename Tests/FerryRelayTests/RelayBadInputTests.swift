import FerryRelay
import FerrySync
import Foundation
import Testing

/// Hostile and broken requests against a real `ferry-relay serve`, over raw sockets: each gets
/// its documented status, nothing is half-stored (the owner's usage and pull are checked after),
/// and the relay goes on serving a normal client right after. What `RelayProcessTests` already
/// covers (a few malformed push bodies, an oversize body sent in full, a missing or unknown
/// token, the basic bad blob keys) is not repeated here.
@Suite(.serialized) struct RelayBadInputTests {
    /// A relay with an owner that has `stored` (one event) on it.
    struct Fixture {
        let relay: RelayHarness
        let owner: OwnerID
        let token: String
        let stored: Envelope
        var base: String { "/v1/owners/\(owner)" }

        init(config: String = "ConnectionTimeoutSeconds=2\nMaxBlobBytes=65536\n") throws {
            relay = try RelayHarness(extraConfig: config)
            try relay.start()
            owner = TestEnvelopes.owner()
            token = try relay.createOwner(owner.description)
            stored = TestEnvelopes.make(owner: owner, stream: TestEnvelopes.stream(), millis: 1000)
            let push = try relay.call("POST", "/v1/owners/\(owner)/events", token: token,
                                      body: Array("{\"events\":[\"\(Base64.encode(stored.encoded))\"]}".utf8))
            guard push.status == 200 else { throw HTTPTestClient.Failure(description: "setup push: \(push.status) \(push.text)") }
        }

        /// Nothing changed: one event (the one stored at setup), no blob, and a normal client
        /// is served at once.
        func expectIntact(_ context: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
            let info = try relay.call("GET", base, token: token)
            #expect(info.status == 200 && info.json["events"] as? Int == 1 && info.json["blobs"] as? Int == 0,
                    "\(context): \(info.status) \(info.text)", sourceLocation: sourceLocation)
            let page = try relay.call("GET", base + "/events", token: token)
            let events = (page.json["events"] as? [String] ?? []).map { Base64.decode($0.utf8) ?? [] }
            #expect(events == [stored.encoded], "\(context): the pull changed", sourceLocation: sourceLocation)
            let t0 = Date()
            #expect(try relay.call("GET", "/healthz").status == 200, sourceLocation: sourceLocation)
            #expect(Date().timeIntervalSince(t0) < 1, "\(context): a normal client waited", sourceLocation: sourceLocation)
        }

        /// The request's response, its status and JSON error code checked.
        @discardableResult
        func expectError(_ method: String, _ target: String, token: String?, body: [UInt8]? = nil, headers: [String] = [],
                         status: Int, code: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> HTTPTestClient.Response {
            let r = try relay.call(method, target, token: token, body: body, headers: headers)
            #expect(r.status == status, "\(method) \(target.prefix(120)): \(r.status) \(r.text.prefix(200))", sourceLocation: sourceLocation)
            if method != "HEAD" {
                #expect(r.headers["content-type"] == "application/json" && r.json["message"] is String,
                        "\(method) \(target.prefix(120)): not a JSON error: \(r.text.prefix(200))", sourceLocation: sourceLocation)
                if let code {
                    #expect(r.json["error"] as? String == code, "\(method) \(target.prefix(120)): \(r.text.prefix(200))",
                            sourceLocation: sourceLocation)
                }
            }
            return r
        }
    }

    @Test func malformedAndMistypedBodiesStoreNothing() throws {
        let f = try Fixture()
        let fresh = Base64.encode(TestEnvelopes.make(owner: f.owner, stream: TestEnvelopes.stream(), millis: 2000).encoded)
        // Several carry a valid envelope next to the fault: the batch is refused whole.
        let bad: [(String, [UInt8])] = [
            ("empty", []), ("null", Array("null".utf8)), ("a number", Array("5".utf8)), ("a string", Array("\"events\"".utf8)),
            ("events null", Array(#"{"events":null}"#.utf8)), ("events an object", Array(#"{"events":{}}"#.utf8)),
            ("a null event", Array(#"{"events":[null]}"#.utf8)), ("an object event", Array(#"{"events":[{"a":1}]}"#.utf8)),
            ("a bool event", Array(#"{"events":[true]}"#.utf8)),
            ("an extra member", Array(#"{"events":["\#(fresh)"],"extra":1}"#.utf8)),
            ("trailing bytes", Array(#"{"events":["\#(fresh)"]} x"#.utf8)),
            ("truncated", Array(#"{"events":["\#(fresh)"]"#.utf8)),
            ("a trailing comma", Array(#"{"events":["\#(fresh)",]}"#.utf8)),
            ("too deep", Array(#"{"events":[[[[[[[[[["x"]]]]]]]]]]}"#.utf8)),
            ("invalid UTF-8", [0x7B, 0x22, 0x65, 0xFF, 0x22, 0x3A, 0x5B, 0x5D, 0x7D]),
            ("a NUL in a string", Array(#"{"events":["\#(fresh)"#.utf8) + [0] + Array(#""]}"#.utf8)),
        ]
        for (what, body) in bad {
            let r = try f.relay.call("POST", f.base + "/events", token: f.token, body: body)
            #expect(r.status == 400 && ["bad_json", "bad_request"].contains(r.json["error"] as? String ?? ""), "\(what): \(r.status) \(r.text)")
        }
        // One event over the batch limit: 413, and none of the 2,001 is kept.
        let many = "{\"events\":[" + Array(repeating: "\"\(fresh)\"", count: RelayConfiguration.maxEventsPerPush + 1).joined(separator: ",") + "]}"
        try f.expectError("POST", f.base + "/events", token: f.token, body: Array(many.utf8), status: 413, code: "too_large")
        try f.expectIntact("after malformed pushes")

        // Pairing: wrong types, missing members, bad device names, extra members, an oversize body.
        let pairBodies = [
            #"{"code":1,"device":"x"}"#, #"{"code":"0000-0000-0000"}"#, #"{"device":"x"}"#,
            #"{"code":"0000-0000-0000","device":""}"#, #"{"code":"0000-0000-0000","device":"a\u0001b"}"#,
            #"{"code":"0000-0000-0000","device":"\#(String(repeating: "d", count: 65))"}"#,
            #"{"code":"0000-0000-0000","device":"x","role":"owner"}"#, #"["code","device"]"#,
        ]
        for body in pairBodies {
            try f.expectError("POST", "/v1/pair", token: nil, body: Array(body.utf8), status: 400)
        }
        try f.expectError("POST", "/v1/pair", token: nil, body: [UInt8](repeating: 0x20, count: 4097), status: 413, code: "too_large")
        let tokens = try f.relay.call("GET", f.base + "/tokens", token: f.token)
        #expect((tokens.json["tokens"] as? [Any])?.count == 1)
        try f.expectIntact("after malformed pairings")
    }

    @Test func oversizeBodiesAreRefusedFromTheHeadOrTheStream() throws {
        let f = try Fixture()
        // Content-Length over the limit: answered from the head, before any body is sent.
        for (target, length) in [(f.base + "/events", (8 << 20) + 1), (f.base + "/blobs/" + String(repeating: "a", count: 64), 65537)] {
            let client = try HTTPTestClient(port: f.relay.port, timeoutSeconds: 5)
            let method = target.contains("/blobs/") ? "PUT" : "POST"
            client.send(Array("\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(f.token)\r\nContent-Length: \(length)\r\nConnection: close\r\n\r\n".utf8))
            let r = try client.readResponse()
            #expect(r.status == 413 && r.json["error"] as? String == "too_large", "\(method) with Content-Length \(length): \(r.status) \(r.text)")
        }
        // Chunked (no length up front) and over the limit: read to its end, then 413; nothing kept.
        let fresh = Base64.encode(TestEnvelopes.make(owner: f.owner, stream: TestEnvelopes.stream(), millis: 3000).encoded)
        let prefix = Array("{\"events\":[\"\(fresh)\"],\"pad\":\"".utf8)
        let push = prefix + [UInt8](repeating: 0x61, count: (8 << 20) + 1 - prefix.count) + Array("\"}".utf8)
        let key = String(repeating: "b", count: 64)
        for (method, target, body) in [("POST", f.base + "/events", push), ("PUT", f.base + "/blobs/" + key, [UInt8](repeating: 7, count: 65537))] {
            let client = try HTTPTestClient(port: f.relay.port)
            client.send(HTTPTestClient.request(method, target, token: f.token, headers: ["Transfer-Encoding: chunked"]) + HTTPTestClient.chunked(body))
            let r = try client.readResponse()
            #expect(r.status == 413 && r.json["error"] as? String == "too_large", "chunked \(method): \(r.status) \(r.text)")
        }
        #expect(try f.relay.call("GET", f.base + "/blobs/" + key, token: f.token).status == 404)
        // No upload left behind in the spool.
        let spool = f.relay.root + "/state/blobs/.tmp"
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: spool)) ?? []).isEmpty)
        try f.expectIntact("after oversize bodies")
        // A chunked blob within the limit is stored whole.
        let small = [UInt8](repeating: 9, count: 65536)
        let client = try HTTPTestClient(port: f.relay.port)
        client.send(HTTPTestClient.request("PUT", f.base + "/blobs/" + key, token: f.token, headers: ["Transfer-Encoding: chunked"]) + HTTPTestClient.chunked(small, chunkSize: 1000))
        #expect(try client.readResponse().status == 201)
        #expect(try f.relay.call("GET", f.base + "/blobs/" + key, token: f.token).body == small)
        #expect(try f.relay.call("DELETE", f.base, token: f.token).status == 204)
        #expect(try f.relay.call("GET", f.base, token: f.token).json["blobs"] as? Int == 0)
    }

    @Test func malformedTokensAreUnauthorized() throws {
        let f = try Fixture()
        let body43 = String(f.token.dropFirst(4))
        let headers = [
            "Authorization: Bearer", "Authorization: Bearer ", "Authorization: Bearer fr1_",
            "Authorization: Bearer \(f.token.dropLast())", "Authorization: Bearer \(f.token)A",
            "Authorization: Bearer fr2_\(body43)", "Authorization: Bearer FR1_\(body43)",
            "Authorization: Bearer fr1_\(String(repeating: "!", count: 43))",
            "Authorization: Bearer fr1_\(String(repeating: "/", count: 43))",
            "Authorization: Bearer \(f.token) extra", "Authorization: Token \(f.token)", "Authorization: \(f.token)",
            "Authorization: Bearer fr1_\(body43.dropLast())é",
            "Authorization: Bearer \(String(repeating: "x", count: 8000))",
        ]
        for header in headers {
            for (method, target) in [("GET", f.base + "/events"), ("POST", f.base + "/events"), ("GET", f.base), ("DELETE", f.base)] {
                let r = try f.expectError(method, target, token: nil, body: method == "POST" ? Array("{\"events\":[]}".utf8) : nil,
                                          headers: [header], status: 401, code: "unauthorized")
                #expect(r.headers["www-authenticate"]?.hasPrefix("Bearer") == true)
                // What a user sees through ferryd: what is wrong with the token, what to do.
                let message = (r.json["message"] as? String) ?? ""
                #expect(message.contains("token is malformed") && message.contains("ferry-relay admin create-owner"), "\(header.prefix(80)): \(message)")
            }
        }
        // The scheme is case-insensitive and spaces around the token do not matter.
        #expect(try f.relay.call("GET", f.base, headers: ["Authorization: bearer \(f.token)"]).status == 200)
        #expect(try f.relay.call("GET", f.base, headers: ["Authorization: Bearer   \(f.token)  "]).status == 200)
        try f.expectIntact("after bad tokens")
    }

    @Test func pathTraversalInBlobKeysAndOwnerIds() throws {
        let f = try Fixture()
        let key = String(repeating: "c", count: 64)
        let keys = [
            "..%2F..%2Fetc%2Fpasswd", "%2e%2e%2f%2e%2e%2fetc%2fpasswd", "%2E%2E/%2E%2E/etc/passwd", "../../../etc/passwd",
            "..", ".", "%2e%2e", String(repeating: "aB", count: 32), String(repeating: "a", count: 63), String(repeating: "a", count: 65),
            "%61" + String(repeating: "a", count: 63), key + "%00", key + "/", key + "/..", "", "..%5c..%5cetc%5cpasswd",
            String(repeating: "a", count: 62) + "%2F",
        ]
        for k in keys {
            for method in ["PUT", "GET", "HEAD"] {
                try f.expectError(method, f.base + "/blobs/" + k, token: f.token, body: method == "PUT" ? [1, 2, 3] : nil,
                                  status: 400, code: "bad_blob_key")
            }
        }
        for o in ["..", "..%2F..%2Fetc", "%2e%2e", f.owner.description.uppercased(), String(f.owner.description.dropLast()),
                  f.owner.description + "0", f.owner.description + "%00"] {
            try f.expectError("GET", "/v1/owners/\(o)/events", token: f.token, status: 400, code: "bad_owner")
        }
        // An owner id that is well formed but not the token's: 403, never found or served.
        try f.expectError("GET", "/v1/owners/\(String(repeating: "0", count: 32))/events", token: f.token, status: 403, code: "forbidden")
        #expect(!FileManager.default.fileExists(atPath: f.relay.root + "/etc"))
        #expect(filesBelow(f.relay.root + "/state/blobs").isEmpty)
        try f.expectIntact("after traversal attempts")
    }

    @Test func queryInjectionInAfterLimitAndWait() throws {
        let f = try Fixture()
        let events = f.base + "/events"
        let cases: [(String, String)] = [
            ("after=nope", "bad_cursor"), ("after=-1", "bad_cursor"), ("after=1e3", "bad_cursor"), ("after=0x10", "bad_cursor"),
            ("after=1%20OR%201=1", "bad_cursor"), ("after=1'--", "bad_cursor"), ("after=1;DROP%20TABLE%20events", "bad_cursor"),
            ("after=%00", "bad_cursor"), ("after=", "bad_cursor"), ("after=99999999999999999999", "bad_cursor"),
            ("after=9223372036854775808", "bad_cursor"), ("after=%201", "bad_cursor"), ("after=1%0D%0AX-Injected:%201", "bad_cursor"),
            ("limit=0", "bad_limit"), ("limit=1001", "bad_limit"), ("limit=-1", "bad_limit"), ("limit=1e3", "bad_limit"),
            ("limit=abc", "bad_limit"), ("limit=%2B1", "bad_limit"), ("limit=1.5", "bad_limit"), ("limit=", "bad_limit"),
            ("limit=00000000001", "bad_limit"),
            ("wait=-1", "bad_wait"), ("wait=3601", "bad_wait"), ("wait=1.5", "bad_wait"), ("wait=%2B1", "bad_wait"),
            ("wait=abc", "bad_wait"), ("wait=99999999", "bad_wait"),
            ("after=1&after=2", "bad_query"), ("%zz=1", "bad_query"), ("after=%zz", "bad_query"), ("=1", "bad_query"),
            ((0..<17).map { "p\($0)=1" }.joined(separator: "&"), "bad_query"), ("after=%C3%28", "bad_query"),
        ]
        for (query, code) in cases {
            let r = try f.expectError("GET", events + "?" + query, token: f.token, status: 400, code: code)
            #expect(r.headers["x-injected"] == nil)
        }
        // The edges that are valid. The largest cursor is well formed, but too far beyond
        // anything the relay handed out for a restore from an older backup to explain: refused
        // as never handed out, starting nobody over.
        let made = try f.expectError("GET", events + "?after=9223372036854775807", token: f.token, status: 400, code: "bad_cursor")
        #expect(made.text.contains("never handed out"), "\(made.text)")
        #expect(try f.relay.call("GET", events + "?limit=1000&after=0&wait=0&unknown=x", token: f.token).status == 200)
        try f.expectIntact("after query injection")
    }

    /// A JSON body declared as something else is refused with 415 before it is read; an
    /// undeclared one, or JSON with parameters, is taken.
    @Test func aPushDeclaredAsSomethingOtherThanJSONIs415() throws {
        let f = try Fixture()
        let fresh = Base64.encode(TestEnvelopes.make(owner: f.owner, stream: TestEnvelopes.stream(), millis: 7000).encoded)
        let body = Array("{\"events\":[\"\(fresh)\"]}".utf8)
        for type in ["text/plain", "application/x-www-form-urlencoded", "application/jsonx"] {
            let r = try f.expectError("POST", f.base + "/events", token: f.token, body: body, headers: ["Content-Type: \(type)"],
                                      status: 415, code: "unsupported_media_type")
            #expect(r.text.contains("application/json"), "\(r.text)")
        }
        try f.expectIntact("pushes declared as something else")
        for type in ["application/json; charset=utf-8", "Application/JSON"] {
            #expect(try f.relay.call("POST", f.base + "/events", token: f.token, body: body, headers: ["Content-Type: \(type)"]).status == 200)
        }
    }

    /// At MaxConnections (waiting pulls hold connections) a new request is answered 503 at
    /// once and closed, never left waiting unanswered; once the waiting clients leave (before
    /// their waits end), all is served.
    @Test func aRelayAtItsConnectionLimitSaysSoAtOnce() throws {
        let f = try Fixture(config: "MaxConnections=16\n")
        let cursor = try #require(try f.relay.call("GET", f.base + "/events", token: f.token).json["cursor"] as? String)
        // One more than the limit: it is reached even while the connection of the call above
        // is still closing (the one too many is then answered 503 and closed).
        var waiting: [HTTPTestClient] = []
        for _ in 0..<17 {
            let c = try HTTPTestClient(port: f.relay.port)
            #expect(c.send(HTTPTestClient.request("GET", f.base + "/events?wait=30&after=" + cursor, token: f.token)))
            waiting.append(c)
        }
        // Once sixteen are parked (a loaded machine may take a while to connect them), a
        // request is answered 503 at once.
        var over: HTTPTestClient.Response?
        let parked = Date()
        while over == nil && Date().timeIntervalSince(parked) < 10 {
            let t0 = Date()
            let r = try f.relay.call("GET", f.base, token: f.token)
            if r.status == 503 {
                over = r
                #expect(Date().timeIntervalSince(t0) < 5, "answered only after \(Date().timeIntervalSince(t0)) s")
            } else {
                Thread.sleep(forTimeInterval: 0.1)
            }
        }
        let r = try #require(over, "never answered 503 with sixteen pulls waiting")
        #expect(r.json["error"] as? String == "unavailable", "\(r.text.prefix(200))")
        #expect((r.json["message"] as? String ?? "").contains("MaxConnections=16") && r.headers["retry-after"] == "5")
        // The waiting clients leave: their pulls are answered within a second or so (a parked
        // connection is not watched otherwise), and requests are served again.
        waiting.removeAll()   // closes them
        let t0 = Date()
        var status = 0
        while Date().timeIntervalSince(t0) < 5 {
            status = try f.relay.call("GET", f.base, token: f.token).status
            if status == 200 { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(status == 200 && Date().timeIntervalSince(t0) < 4, "\(status) after \(Date().timeIntervalSince(t0)) s")
        #expect(f.relay.log.contains("at MaxConnections=16"))
    }

    @Test func aClientTricklingOneByteASecondIsDroppedWhileOthersAreServed() throws {
        let f = try Fixture()
        // One trickles its head, one its body (a valid push that would store an event).
        let fresh = Base64.encode(TestEnvelopes.make(owner: f.owner, stream: TestEnvelopes.stream(), millis: 4000).encoded)
        let head = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: \(String(repeating: "s", count: 100))\r\n\r\n".utf8)
        let push = HTTPTestClient.request("POST", f.base + "/events", token: f.token, body: Array("{\"events\":[\"\(fresh)\"]}".utf8))
        let bodyStart = push.firstRange(of: Array("\r\n\r\n".utf8))!.upperBound
        let slowHead = try HTTPTestClient(port: f.relay.port)
        let slowBody = try HTTPTestClient(port: f.relay.port)
        slowBody.send(Array(push[..<bodyStart]))
        let stop = Date().addingTimeInterval(20)
        let trickle = { (client: HTTPTestClient, bytes: ArraySlice<UInt8>) in
            Thread {
                for byte in bytes where Date() < stop {
                    guard client.send([byte]) else { return }
                    Thread.sleep(forTimeInterval: 1)
                }
            }
        }
        let started = Date()
        trickle(slowHead, head[...]).start()
        trickle(slowBody, push[bodyStart...]).start()
        // Others are served at once meanwhile.
        for _ in 0..<6 {
            let t0 = Date()
            #expect(try f.relay.call("GET", f.base, token: f.token).status == 200)
            #expect(Date().timeIntervalSince(t0) < 0.5)
            Thread.sleep(forTimeInterval: 0.3)
        }
        // ConnectionTimeoutSeconds=2: the head is due within 2 s, the body past 2 s must average
        // 1 KiB/s; the sweep runs each second.
        #expect(slowHead.closedByPeer(within: 10))
        #expect(slowBody.closedByPeer(within: 10))
        let dropped = Date().timeIntervalSince(started)
        #expect(dropped < 8, "the slow clients were dropped after \(dropped) s")
        try f.expectIntact("after slow clients")
    }

    @Test func headersTooLargeAreRefusedByTheHTTPLayer() throws {
        let f = try Fixture()
        // Over the 64 KiB a connection may use: libmicrohttpd answers 431 itself (documented).
        let big = try HTTPTestClient(port: f.relay.port)
        big.send(HTTPTestClient.request("GET", f.base, token: f.token, headers: ["X-Big: " + String(repeating: "a", count: 70_000)]))
        #expect(try big.readResponse().status == 431)
        let many = try HTTPTestClient(port: f.relay.port)
        many.send(HTTPTestClient.request("GET", f.base, token: f.token, headers: (0..<3000).map { "X-H\($0): \(String(repeating: "v", count: 20))" }))
        #expect(try many.readResponse().status == 431)
        // A request line over the memory: 414 from the HTTP layer; one within it but over 4096
        // bytes: the relay's JSON 414.
        let line = try HTTPTestClient(port: f.relay.port)
        line.send(HTTPTestClient.request("GET", f.base + "/events?after=" + String(repeating: "1", count: 70_000), token: f.token))
        #expect(try line.readResponse().status == 414)
        try f.expectError("GET", f.base + "/events?pad=" + String(repeating: "1", count: 5000), token: f.token, status: 414, code: "uri_too_long")
        try f.expectIntact("after oversize heads")
    }
}

extension RelayBadInputTests {
    /// Requests libmicrohttpd refuses itself (400, 505) are logged by the relay at debug level,
    /// in its own format and without the HTML page, never as raw lines on stderr: at the default
    /// level a scanner sending junk leaves nothing in the journal.
    @Test func theHTTPLayersMessagesGoThroughTheRelaysLog() throws {
        for level in ["info", "debug"] {
            let f = try Fixture(config: "ConnectionTimeoutSeconds=2\nLogLevel=\(level)\n")
            for junk in [(0..<1024).map { UInt8(truncatingIfNeeded: $0) }, Array("GET / HTTP/9.9\r\n\r\n".utf8)] {
                let client = try HTTPTestClient(port: f.relay.port, timeoutSeconds: 5)
                client.send(junk)
                #expect([400, 505].contains(try client.readResponse().status))
            }
            try f.expectIntact("after junk")
            let lines = f.relay.log.split(separator: "\n")
            #expect(!lines.contains { $0.hasPrefix("Error processing request") || $0.contains("<html>") }, "\(f.relay.log)")
            let logged = lines.filter { $0.contains("libmicrohttpd: Error processing request") }
            if level == "debug" {
                #expect(logged.count == 2 && logged.allSatisfy { $0.contains("debug:") }, "\(f.relay.log)")
            } else {
                #expect(logged.isEmpty, "\(f.relay.log)")
            }
        }
    }
}

/// Every regular file under `root`, recursively.
private func filesBelow(_ root: String) -> [String] {
    guard let e = FileManager.default.enumerator(atPath: root) else { return [] }
    var out: [String] = []
    while let rel = e.nextObject() as? String {
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: root + "/" + rel, isDirectory: &isDir), !isDir.boolValue { out.append(rel) }
    }
    return out
}
