import FerryJSON
import Foundation
import FerryModel
@testable import FerryRelay
import FerrySync
import Testing

@Suite struct RelayWireParsingTests {
    let owner = "0123456789abcdef0123456789abcdef"

    /// A push's answer, written straight to bytes, is what `HTTPResponse.json` makes of the
    /// same results as JSON values.
    @Test func pushResultsAreWrittenAsTheirJSONValues() {
        let e1 = EventID(high: 0x0123_4567_89ab_cdef, low: 0xfedc_ba98_7654_3210), e2 = EventID(high: 0, low: 10)
        let rows: [(EventID?, PushResults.Status, String?)] = [
            (e1, .accepted, nil), (e2, .duplicate, nil), (e1, .accepted, "superseded by a newer version of its stream"),
            (nil, .rejected, "not base64 (standard alphabet, padded)"), (e2, .rejected, "quote \" backslash \\ tab \t é \u{1}"),
        ]
        for n in 0...rows.count {
            var written = PushResults(capacity: n)
            var values: [JSONValue] = []
            for (event, status, reason) in rows.prefix(n) {
                written.add(event: event, status, reason: reason)
                var o: [String: JSONValue] = ["status": .string(status.rawValue)]
                if let event { o["event"] = .string(event.description) }
                if let reason { o["reason"] = .string(reason) }
                values.append(.object(o))
            }
            #expect(written.response() == .json(200, ["results": .array(values)]))
        }
        #expect(e1.description == "0123456789abcdeffedcba9876543210" && e2.description == "0000000000000000000000000000000a")
        #expect(EventID(hex: e1.description) == e1)
    }

    @Test func targetsSplitPathAndQuery() throws {
        let t = try RequestTarget.parse("/v1/owners/x/events?after=12&limit=5&wait=0")
        #expect(t.path == "/v1/owners/x/events")
        #expect(t.query == ["after": "12", "limit": "5", "wait": "0"])
        #expect(try RequestTarget.parse("/a?").query == [:])
        #expect(try RequestTarget.parse("/a?x=%41+b&&y").query == ["x": "A b", "y": ""])
    }

    @Test func targetsRefuseWhatTheyShould() {
        #expect(throws: RequestTarget.Failure.notAbsolutePath) { try RequestTarget.parse("v1") }
        #expect(throws: RequestTarget.Failure.tooLong(4097)) { try RequestTarget.parse("/" + String(repeating: "a", count: 4096)) }
        for bad in ["/a?x=%4", "/a?x=%zz", "/a?x=1&x=2", "/a?=1", "/a?x=%ff"] {
            #expect(throws: RequestTarget.Failure.self, "\(bad)") { try RequestTarget.parse(bad) }
        }
        let many = "/a?" + (0..<17).map { "k\($0)=1" }.joined(separator: "&")
        #expect(throws: RequestTarget.Failure.self) { try RequestTarget.parse(many) }
    }

    /// Every prefix of a valid target either parses or fails with a typed error, never traps.
    @Test func targetPrefixesNeverTrap() {
        let full = "/v1/owners/\(owner)/events?after=123&limit=10&wait=%32%30"
        for i in 0...full.utf8.count {
            let prefix = String(decoding: Array(full.utf8)[..<i], as: UTF8.self)
            _ = try? RequestTarget.parse(prefix)
        }
    }

    @Test func routesResolve() throws {
        let o = OwnerID(hex: owner)!
        let key = String(repeating: "ab", count: 32)
        #expect(try Router.resolve(method: "GET", path: "/healthz") == .health)
        #expect(try Router.resolve(method: "GET", path: "/readyz") == .ready)
        #expect(try Router.resolve(method: "GET", path: "/metrics") == .metrics)
        #expect(try Router.resolve(method: "POST", path: "/v1/pair") == .pair)
        #expect(try Router.resolve(method: "GET", path: "/v1/owners/\(owner)") == .ownerInfo(o))
        #expect(try Router.resolve(method: "DELETE", path: "/v1/owners/\(owner)") == .deleteOwner(o))
        #expect(try Router.resolve(method: "POST", path: "/v1/owners/\(owner)/events") == .pushEvents(o))
        #expect(try Router.resolve(method: "GET", path: "/v1/owners/\(owner)/events") == .pullEvents(o))
        #expect(try Router.resolve(method: "PUT", path: "/v1/owners/\(owner)/blobs/\(key)") == .putBlob(o, key: key))
        #expect(try Router.resolve(method: "HEAD", path: "/v1/owners/\(owner)/blobs/\(key)") == .headBlob(o, key: key))
        #expect(try Router.resolve(method: "POST", path: "/v1/owners/\(owner)/pairing-codes") == .createPairingCode(o))
        #expect(try Router.resolve(method: "GET", path: "/v1/owners/\(owner)/tokens") == .listTokens(o))
        #expect(try Router.resolve(method: "DELETE", path: "/v1/owners/\(owner)/tokens/0011223344556677") == .revokeToken(o, id: "0011223344556677"))
    }

    @Test func routesRefuse() {
        func status(_ m: String, _ p: String) -> Int {
            do { _ = try Router.resolve(method: m, path: p); return 200 } catch { return error.response.status }
        }
        #expect(status("GET", "/") == 404)
        #expect(status("GET", "/v1") == 404)
        #expect(status("GET", "/v1/owners/\(owner)/nope") == 404)
        #expect(status("GET", "/v1/owners/\(owner)/events/x") == 404)
        #expect(status("PUT", "/v1/owners/\(owner)/events") == 405)
        #expect(status("POST", "/healthz") == 405)
        #expect(status("GET", "/v1/owners/\(owner.uppercased())") == 400)
        #expect(status("GET", "/v1/owners/\(owner.dropLast())") == 400)
        let key = String(repeating: "ab", count: 32)
        for bad in ["../x", key.uppercased(), String(key.dropLast()), key + "0", "..%2Fx", "\(key)/x", "../../etc/passwd"] {
            #expect(status("PUT", "/v1/owners/\(owner)/blobs/\(bad)") == 400, "\(bad)")
        }
        #expect(status("DELETE", "/v1/owners/\(owner)/tokens/XYZ") == 400)
    }

    @Test func methodNotAllowedNamesTheMethods() {
        let r = RelayError.methodNotAllowed(allowed: ["GET", "POST"]).response
        #expect(r.status == 405)
        #expect(r.header("Allow") == "GET, POST, HEAD")
    }

    @Test func cursors() {
        #expect(Cursor(text: "0")?.sequence == 0)
        #expect(Cursor(text: "9223372036854775807")?.sequence == Int64.max)
        for bad in ["", "-1", "+1", "1.0", "9223372036854775808", "12345678901234567890", "a", " 1"] {
            #expect(Cursor(text: bad) == nil, "\(bad)")
        }
    }

    @Test func pullParameters() throws {
        let p = try PullParameters.parse([:], maxWait: 30)
        #expect(p == PullParameters(after: .start, limit: 400, waitSeconds: 0))
        #expect(try PullParameters.parse(["after": "5", "limit": "1000", "wait": "30"], maxWait: 30)
            == PullParameters(after: Cursor(5), limit: 1000, waitSeconds: 30))
        #expect(try PullParameters.parse(["skipDevice": "00000000000000ff"], maxWait: 30).skipDevice == [0, 0, 0, 0, 0, 0, 0, 0xff])
        // A wait over the relay's MaxWaitSeconds is cut to it; over 3600 it is refused.
        #expect(try PullParameters.parse(["wait": "31"], maxWait: 30).waitSeconds == 30)
        #expect(try PullParameters.parse(["wait": "3600"], maxWait: 5).waitSeconds == 5)
        #expect(try PullParameters.parse(["wait": "3"], maxWait: 5).waitSeconds == 3)
        for bad: [String: String] in [["limit": "0"], ["limit": "1001"], ["limit": "+5"], ["wait": "3601"], ["wait": "-1"], ["after": "x"],
                                      ["skipDevice": "00000000000000FF"], ["skipDevice": "ff"], ["skipDevice": "000000000000000g"]] {
            #expect(throws: RelayError.self, "\(bad)") { try PullParameters.parse(bad, maxWait: 30) }
        }
    }

    @Test func base64RoundTripsAtEveryLength() {
        var rng = SplitMix64(seed: 42)
        for n in 0..<70 {
            let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let s = Base64.encode(bytes)
            #expect(Base64.decode(s.utf8) == bytes)
            #expect(Base64.decodeURL(Base64.encodeURL(bytes)) == bytes)
            // Every proper prefix of a non-empty encoding that is not a whole group is refused.
            for cut in 0..<s.utf8.count where cut % 4 != 0 {
                #expect(Base64.decode(Array(s.utf8)[..<cut]) == nil)
            }
        }
        #expect(Base64.decode("QQ==".utf8) == [0x41])
        #expect(Base64.decode("QR==".utf8) == nil) // non-zero padding bits
        #expect(Base64.decode("Q===".utf8) == nil)
        #expect(Base64.decode("QQ=A".utf8) == nil)
        #expect(Base64.decode("QQ-_".utf8) == nil)
    }

    /// Decoding refuses a character outside the alphabet at every position, takes every
    /// two- and three-character tail whose unused bits are zero and no other, and agrees with
    /// Foundation's decoder on what both take.
    @Test func base64DecodingChecksEveryCharacterAndTail() {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        let text = Array(Base64.encode((0..<200).map { UInt8(truncatingIfNeeded: $0 &* 37) }).utf8)
        for i in 0..<text.count where text[i] != UInt8(ascii: "=") {
            for bad in [UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: " "), 0, 0x80, 0xFF] {
                var mutated = text
                mutated[i] = bad
                #expect(Base64.decode(mutated) == nil, "\(bad) at \(i)")
            }
        }
        for a in alphabet {
            for b in alphabet {
                let padded = Array("QUJD".utf8) + [a, b, UInt8(ascii: "="), UInt8(ascii: "=")]
                let expected = Data(base64Encoded: Data(padded)).map { [UInt8]($0) }
                let decoded = Base64.decode(padded)
                if decoded != nil { #expect(decoded == expected) }
                #expect((decoded != nil) == ((alphabet.firstIndex(of: b)! & 0xF) == 0), "\(padded)")
                let three = Array("QUJD".utf8) + [a, b, UInt8(ascii: "A"), UInt8(ascii: "=")]
                #expect(Base64.decode(three) == Data(base64Encoded: Data(three)).map { [UInt8]($0) })
            }
        }
    }

    @Test func tokens() {
        let t = AccessToken()
        #expect(t.text.hasPrefix("fr1_"))
        #expect(t.text.utf8.count == AccessToken.textLength)
        #expect(!t.text.contains("="))
        #expect(AccessToken(text: t.text) == t)
        #expect(AccessToken(authorization: "Bearer " + t.text) == t)
        #expect(AccessToken(authorization: "bearer  " + t.text) == t)
        for bad in ["", "Bearer", "Basic " + t.text, "Bearer fr2_" + t.text.dropFirst(4), "Bearer " + t.text.dropLast(),
                    "Bearer " + t.text + "A", "Bearer " + t.text.replacingOccurrences(of: "fr1_", with: "fr1=")] {
            #expect(AccessToken(authorization: bad) == nil, "\(bad)")
        }
        #expect(t.hash.count == 32)
        #expect(TokenID.isValid(TokenID.make()))
        #expect(!TokenID.isValid("00112233445566778"))
    }

    @Test func pairingCodes() {
        let c = PairingCode()
        #expect(c.display.count == 14)
        #expect(PairingCode(typed: c.display) == c)
        #expect(PairingCode(typed: c.display.lowercased()) == c)
        #expect(PairingCode(typed: "0000 1111 2222") == PairingCode(typed: "oooo-iiii-2222"))
        #expect(PairingCode(typed: "OOOO-LLLL-2222")?.normalized == "000011112222")
        for bad in ["", "0000-0000-000", "0000-0000-00000", "0000-0000-000U", String(repeating: "-", count: 65)] {
            #expect(PairingCode(typed: bad) == nil, "\(bad)")
        }
    }

    @Test func pushBodies() throws {
        #expect(try PushRequest.parse(Array(#"{"events":["QQ==","x"]}"#.utf8), maxBytes: 1000) == [[0x41], nil])
        #expect(try PushRequest.parse(Array(#"{"events":[]}"#.utf8), maxBytes: 1000) == [])
        for bad in ["", "[]", "{}", #"{"events":"x"}"#, #"{"events":[1]}"#, #"{"events":[],"x":1}"#, #"{"events":["#] {
            #expect(throws: RelayError.self, "\(bad)") { try PushRequest.parse(Array(bad.utf8), maxBytes: 1000) }
        }
        let many = #"{"events":["# + Array(repeating: #""QQ==""#, count: 2001).joined(separator: ",") + "]}"
        #expect(throws: RelayError.tooLarge("2001 events in one push; the limit is 2000")) { try PushRequest.parse(Array(many.utf8), maxBytes: 1 << 20) }
        // Every split of a valid body either parses whole or fails as bad JSON.
        let body = Array(#"{"events":["QQ==","QUI="]}"#.utf8)
        for cut in 0..<body.count {
            #expect(throws: RelayError.self) { try PushRequest.parse(Array(body[..<cut]), maxBytes: 1000) }
        }
    }

    /// A pull's answer, written straight to bytes, is what `HTTPResponse.json` makes of the
    /// same page as JSON values.
    @Test func eventPagesAreWrittenAsTheirJSONValues() {
        let events: [[UInt8]] = [[], [0x41], [0x41, 0x42], [0x41, 0x42, 0x43], Array(0...255), [0xFF, 0xFE, 0xFD, 0xFC]]
        for n in 0...events.count {
            for (cursor, more) in [("0", false), ("123456789", true), ("q\"\\é", false)] {
                let page = Array(events.prefix(n))
                #expect(EventPageResponse.response(events: page, cursor: cursor, more: more) == .json(200, [
                    "events": .array(page.map { .string(Base64.encode($0)) }), "cursor": .string(cursor), "more": .bool(more),
                ]), "\(n) \(cursor) \(more)")
            }
        }
    }

    /// Events read in place give what the body parsed whole gives (the path taken when there
    /// are escapes), and the same errors: for odd spacing, escapes, wrong shapes, and every cut.
    @Test func pushBodiesReadInPlaceAgreeWithTheWholeParse() throws {
        func whole(_ body: [UInt8]) -> Result<[[UInt8]?], RelayError> {
            Result { () throws(RelayError) in try PushRequest.strings(body, maxBytes: 1 << 20).map { Base64.decode($0.utf8) } }
        }
        func inPlace(_ body: [UInt8]) -> Result<[[UInt8]?], RelayError> {
            Result { () throws(RelayError) in try PushRequest.parse(body, maxBytes: 1 << 20) }
        }
        let bodies = [
            #"{"events":["QQ==","QUI=","QUJD","",  "x", "QQ=", "Q===", "é", "QUJDRA=="]}"#,
            " \t\r\n{ \n\"events\" \t:\r[ \"QQ==\" ,\n\"QUI=\"\t] \n} \n",
            #"{"events":[]}"#, #"{ "events" : [ ] }"#,
            #"{"events":["Q\u0051==","QUI\u003d"]}"#, #"{"\u0065vents":["QQ=="]}"#, #"{"events":["QQ==\n"]}"#,
            #"{"events":["QQ\/="]}"#, "", "[]", "{}", "1", #""events""#, #"{"events":"x"}"#, #"{"events":{}}"#,
            #"{"events":[1]}"#, #"{"events":["QQ==",null]}"#, #"{"events":[["QQ=="]]}"#, #"{"events":[],"x":1}"#,
            #"{"x":[],"events":[]}"#, #"{"e\u0076":1,"events":[]}"#, #"{"events":[],"events":[]}"#, #"{"events":["#,
        ]
        for text in bodies {
            let body = Array(text.utf8)
            #expect(inPlace(body) == whole(body), "\(text)")
            for cut in 0..<body.count {
                let part = Array(body[..<cut])
                #expect(inPlace(part) == whole(part), "\(text) cut at \(cut)")
            }
        }
        let many = Array((#"{"events":["# + Array(repeating: #""QQ==""#, count: 2001).joined(separator: ",") + "]}").utf8)
        #expect(inPlace(many) == .failure(.tooLarge("2001 events in one push; the limit is 2000")))
        #expect(inPlace(many) == whole(many))
    }

    @Test func pairBodies() throws {
        #expect(try PairRequest.parse(Array(#"{"code":"AAAA-BBBB-CCCC","device":"laptop"}"#.utf8)).device == "laptop")
        for bad in [#"{"code":"x"}"#, #"{"code":"x","device":""}"#, #"{"code":"x","device":"a\u0001"}"#,
                    #"{"code":1,"device":"d"}"#, #"{"code":"x","device":"d","more":1}"#] {
            #expect(throws: RelayError.self, "\(bad)") { try PairRequest.parse(Array(bad.utf8)) }
        }
    }

    @Test func stampKeysSortLikeStamps() {
        let stamps = [Stamp(millis: -5, counter: 0, node: NodeID(1)), Stamp(millis: 0, counter: 0, node: NodeID(0)),
                      Stamp(millis: 0, counter: 1, node: NodeID(0)), Stamp(millis: 0, counter: 1, node: NodeID(UInt64.max)),
                      Stamp(millis: 1_700_000_000_000, counter: 0, node: NodeID(0))]
        for (a, b) in zip(stamps, stamps.dropFirst()) {
            #expect(StampKey.make(a).lexicographicallyPrecedes(StampKey.make(b)))
        }
    }

    /// A state directory that cannot be used says why in the operator's terms (not
    /// Foundation's), and nothing is created; a missing one is made, 0700.
    @Test func aStateDirectoryInTheWayIsExplained() throws {
        let root = NSTemporaryDirectory() + "ferry-statedir-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        FileManager.default.createFile(atPath: root + "/file", contents: Data())
        for (path, expected) in [(root + "/file", "something other than a directory is in the way"),
                                 (root + "/file/below", "something other than a directory is in the way")] {
            var c = RelayConfiguration(environment: [:])
            try c.apply(text: "[Relay]\nStateDirectory=\(path)")
            let error = #expect(throws: StateDirectoryError.self) { _ = try RelayBackend.openStorage(c) }
            #expect(error?.description.contains(expected) == true && error?.description.contains(path) == true, "\(String(describing: error))")
        }
        var made = RelayConfiguration(environment: [:])
        try made.apply(text: "[Relay]\nStateDirectory=\(root)/a/b")
        _ = try RelayBackend.openStorage(made)
        #expect(try FileManager.default.attributesOfItem(atPath: root + "/a/b")[.posixPermissions] as? Int == 0o700)
    }

    @Test func configuration() throws {
        var c = RelayConfiguration(environment: ["STATE_DIRECTORY": "/var/lib/ferry-relay"])
        try c.apply(text: """
            [Relay]
            Listen=[::1]:9000
            MaxWaitSeconds=5
            CacheMiB=16
            DefaultQuotaBytes=1000
            TombstoneRetentionDays=0.5
            LogLevel=debug
            """)
        #expect(c.listenHost == "::1" && c.listenPort == 9000)
        #expect(c.maxWaitSeconds == 5 && c.defaultQuotaBytes == 1000 && c.tombstoneRetentionDays == 0.5)
        #expect(c.cacheMiB == 16 && RelayConfiguration(environment: [:]).cacheMiB == 64)
        for bad in ["[Relay]\nListen=nope", "[Relay]\nStorage=postgresql", "[Relay]\nMaxWaitSeconds=-1", "[Relay]\nNope=1",
                    "[Relay]\nCacheMiB=1", "[Relay]\nCacheMiB=lots",
                    "[TLS]\nCertificate=/x", "[Relay]\nStateDirectory=relative", "[Relay]\nStorage=mysql",
                    "[Relay]\nStorage=postgresql\n[PostgreSQL]\nConnection=host='unterminated",
                    "[Relay]\nStorage=postgresql\n[PostgreSQL]\nConnection=nosuchkey=1",
                    "[Relay]\nStorage=postgresql\n[PostgreSQL]\nConnection=host=x\nPoolSize=0"] {
            var d = RelayConfiguration(environment: [:])
            #expect(throws: RelayConfiguration.Problem.self, "\(bad)") { try d.apply(text: bad) }
        }
        // A refused connection string is not echoed: it may hold a password.
        var secret = RelayConfiguration(environment: [:])
        do {
            try secret.apply(text: "[Relay]\nStorage=postgresql\n[PostgreSQL]\nConnection=password=hunter2 nosuchkey=1")
            Issue.record("a bad connection string was accepted")
        } catch {
            #expect(error.description.contains("[PostgreSQL] Connection=") && !error.description.contains("hunter2"))
        }
        var pg = RelayConfiguration(environment: [:])
        try pg.apply(text: """
            [Relay]
            Storage=postgresql
            [PostgreSQL]
            Connection=host=127.0.0.1 port=5432 dbname=ferry user=ferry
            PoolSize=8
            """)
        #expect(pg.storage == .postgresql && pg.postgresConnection == "host=127.0.0.1 port=5432 dbname=ferry user=ferry" && pg.postgresPoolSize == 8)
        try pg.apply(text: "[PostgreSQL]\nConnection=postgresql://ferry@db.example:5433/ferry?sslmode=require")
        #expect(pg.postgresConnection == "postgresql://ferry@db.example:5433/ferry?sslmode=require")
    }

    /// The client behind a trusted reverse proxy is the rightmost forwarded address that is
    /// not a trusted proxy; a peer that is no trusted proxy cannot claim another address, and a
    /// malformed entry is not taken.
    @Test func clientAddressBehindTrustedProxies() {
        func head(_ remote: String, _ forwarded: String?) -> HTTPRequestHead {
            HTTPRequestHead(method: "POST", target: "/v1/pair", remoteAddress: remote, forwardedFor: forwarded)
        }
        let proxies: Set<String> = ["127.0.0.1", "10.0.0.2"]
        #expect(head("127.0.0.1", "203.0.113.9").clientAddress(trusting: proxies) == "203.0.113.9")
        #expect(head("127.0.0.1", "198.51.100.1, 203.0.113.9").clientAddress(trusting: proxies) == "203.0.113.9", "the left one is the client's to forge")
        #expect(head("127.0.0.1", "203.0.113.9, 10.0.0.2").clientAddress(trusting: proxies) == "203.0.113.9", "through two proxies")
        #expect(head("127.0.0.1", "2001:db8::7").clientAddress(trusting: proxies) == "2001:db8::7")
        #expect(head("192.0.2.5", "203.0.113.9").clientAddress(trusting: proxies) == "192.0.2.5", "not a trusted proxy")
        #expect(head("127.0.0.1", "203.0.113.9").clientAddress(trusting: []) == "127.0.0.1", "no proxy trusted")
        #expect(head("127.0.0.1", nil).clientAddress(trusting: proxies) == "127.0.0.1")
        #expect(head("127.0.0.1", "not-an-address").clientAddress(trusting: proxies) == "127.0.0.1")
        #expect(head("127.0.0.1", "203.0.113.9, <script>").clientAddress(trusting: proxies) == "127.0.0.1")
        #expect(head("127.0.0.1", "").clientAddress(trusting: proxies) == "127.0.0.1")
        // A relay on [::] sees IPv4 peers mapped into IPv6; spellings differ in case.
        #expect(head("::ffff:127.0.0.1", "203.0.113.9").clientAddress(trusting: proxies) == "203.0.113.9")
        #expect(head("2001:DB8::1", "203.0.113.9").clientAddress(trusting: ["2001:db8::1"]) == "203.0.113.9")
        var c = RelayConfiguration(environment: [:])
        #expect(c.trustedProxies.isEmpty)
        #expect(throws: Never.self) { try c.apply(text: "[Relay]\nTrustedProxies=127.0.0.1 ::1 2001:DB8::1") }
        #expect(c.trustedProxies == ["127.0.0.1", "::1", "2001:db8::1"])
        var bad = RelayConfiguration(environment: [:])
        #expect(throws: RelayConfiguration.Problem.self) { try bad.apply(text: "[Relay]\nTrustedProxies=localhost") }
    }

    @Test func failureRateLimiter() {
        final class Clock: @unchecked Sendable { var t: Int64 = 0 }
        let clock = Clock()
        let limiter = FailureRateLimiter(limit: 5, windowMillis: 60_000, now: { clock.t })
        for _ in 0..<5 { #expect(limiter.retryAfter("a") == nil); limiter.recordFailure("a") }
        #expect(limiter.retryAfter("a") == 60)
        #expect(limiter.retryAfter("b") == nil)
        clock.t = 60_001
        #expect(limiter.retryAfter("a") == nil)
    }
}

import FerryTestSupport
