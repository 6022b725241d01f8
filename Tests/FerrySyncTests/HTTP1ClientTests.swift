import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc
import Synchronization
import Testing
@testable import FerrySync

/// The relay's own HTTP/1.1 client against real sockets on loopback: keep-alive reuse, which
/// failures are retried (idempotent requests only), the timeout without progress,
/// cancellation, and the failures in the same words as URLSession's.
@Suite struct HTTP1ClientTests {
    static func client(_ server: ScriptedHTTPServer, timeout: Duration = .seconds(10), maxBodyBytes: Int = 1 << 20) throws -> HTTP1Client {
        try HTTP1Client(base: URL(string: "http://127.0.0.1:\(server.port)/base")!, timeout: timeout, maxBodyBytes: maxBodyBytes)
    }

    static let get = HTTP1Request(method: "GET", target: "/v1/owners/x/events?limit=1")

    static func post(_ body: String) -> HTTP1Request {
        HTTP1Request(method: "POST", target: "/v1/owners/x/events", headers: [("Content-Type", "application/json")], body: Data(body.utf8))
    }

    /// What `client.send(request)` failed with (nil: it did not fail).
    static func failure(_ client: HTTP1Client, _ request: HTTP1Request) async -> HTTP1ClientError? {
        do {
            _ = try await client.send(request)
            return nil
        } catch {
            return error
        }
    }

    @Test func requestsShareOneKeptAliveConnection() async throws {
        let server = try ScriptedHTTPServer { peer, _ in
            while let (head, body) = peer.readRequest() {
                peer.answer(head.hasPrefix("POST") ? "{\"got\":\(body.count)}" : "{\"n\":1}")
            }
        }
        let client = try Self.client(server)
        for _ in 0..<3 {
            let response = try await client.send(Self.get)
            #expect(response.status == 200 && response.body == Array("{\"n\":1}".utf8) && response.keepAlive)
        }
        let posted = try await client.send(Self.post("[1,2,3]"))
        #expect(posted.body == Array("{\"got\":7}".utf8))
        #expect(server.connections == 1)
        let heads = server.requests
        #expect(heads.first?.hasPrefix("GET /v1/owners/x/events?limit=1 HTTP/1.1\r\nHost: 127.0.0.1:\(server.port)\r\n") == true, "\(heads)")
        #expect(heads.last?.contains("Content-Length: 7\r\n") == true && heads.last?.contains("Content-Type: application/json\r\n") == true)
    }

    @Test func chunkedAndCloseEndedBodies() async throws {
        let server = try ScriptedHTTPServer { peer, index in
            guard index == 0 else { return peer.answerAll() }
            if peer.readRequest() != nil {
                peer.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nchun\r\n3\r\nked\r\n0\r\n\r\n")
                guard peer.readRequest() != nil else { return }
                // Neither framing: the body ends with the connection.
                peer.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nto the end")
            }
        }
        let client = try Self.client(server)
        #expect(try await client.send(Self.get).body == Array("chunked".utf8))
        let ended = try await client.send(Self.get)
        #expect(ended.body == Array("to the end".utf8) && !ended.keepAlive)
        _ = try await client.send(Self.get)
        #expect(server.connections == 2, "a connection whose body ran to its end is not reused")
    }

    @Test func headHasNoBody() async throws {
        let server = try ScriptedHTTPServer { peer, _ in
            while peer.readRequest() != nil { peer.write("HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n") }
        }
        let client = try Self.client(server)
        for _ in 0..<2 {
            let response = try await client.send(HTTP1Request(method: "HEAD", target: "/v1/owners/x/blobs/k"))
            #expect(response.status == 200 && response.body.isEmpty)
        }
        #expect(server.connections == 1)
    }

    /// The relay closed a kept connection just as a request went out on it: a GET is sent again
    /// on a fresh connection; a POST is not (the error is thrown), and is sent only once.
    @Test func aReusedConnectionClosedUnderARequestIsRetriedOnlyWhenIdempotent() async throws {
        let script: @Sendable (ScriptedHTTPServer.Peer, Int) -> Void = { peer, index in
            if index == 0 {
                guard peer.readRequest() != nil else { return }
                peer.answer()
                peer.readRequest()   // then closed without an answer
            } else {
                peer.answerAll()
            }
        }
        let server = try ScriptedHTTPServer(script)
        let client = try Self.client(server)
        _ = try await client.send(Self.get)
        let again = try await client.send(Self.get)
        #expect(again.status == 200)
        #expect(server.connections == 2 && server.requests.count == 3)

        let posts = try ScriptedHTTPServer(script)
        let pushing = try Self.client(posts)
        _ = try await pushing.send(Self.get)
        let failure = await Self.failure(pushing, Self.post("[]"))
        #expect(failure == .closedBeforeAnswer, "\(String(describing: failure))")
        try await Task.sleep(for: .milliseconds(100))
        #expect(posts.connections == 1 && posts.requests.filter { $0.hasPrefix("POST") }.count == 1)

        // A relay push may go twice (the relay stores each event once): it is sent again.
        let pushes = try ScriptedHTTPServer(script)
        let again2 = try Self.client(pushes)
        _ = try await again2.send(Self.get)
        let push = RelayHTTP.http1({ var r = URLRequest(url: URL(string: "http://127.0.0.1:\(pushes.port)/v1/owners/x/events")!)
                                     r.httpMethod = "POST"; r.httpBody = Data("[]".utf8); return r }())
        #expect(push.isIdempotent)
        #expect(try await again2.send(push).status == 200)
        #expect(pushes.connections == 2 && pushes.requests.filter { $0.hasPrefix("POST") }.count == 2)
        // Redeeming a pairing code is not sent twice.
        var pair = URLRequest(url: URL(string: "http://127.0.0.1:1/v1/pair")!)
        pair.httpMethod = "POST"
        #expect(!RelayHTTP.http1(pair).isIdempotent)
    }

    /// A kept connection the relay closed while it sat idle is not used: even a POST then goes
    /// out on a fresh one and succeeds.
    @Test func anIdleConnectionTheServerClosedIsDropped() async throws {
        let server = try ScriptedHTTPServer { peer, _ in
            guard peer.readRequest() != nil else { return }
            peer.answer()
        }
        let client = try Self.client(server)
        _ = try await client.send(Self.get)
        try await Task.sleep(for: .milliseconds(100))
        #expect(try await client.send(Self.post("[]")).status == 200)
        #expect(server.connections == 2)
    }

    @Test func localhostAndIPv6Literals() async throws {
        let server = try ScriptedHTTPServer { peer, _ in peer.answerAll("{\"v\":4}") }
        let byName = try HTTP1Client(base: URL(string: "http://localhost:\(server.port)")!, timeout: .seconds(10), maxBodyBytes: 1 << 20)
        #expect(try await byName.send(Self.get).body == Array("{\"v\":4}".utf8))
        #expect(server.requests.first?.contains("\r\nHost: localhost:\(server.port)\r\n") == true)
        // IPv6 loopback, where this machine has it.
        guard let six = try? ScriptedHTTPServer(ipv6: true, { peer, _ in peer.answerAll("{\"v\":6}") }) else { return }
        let numeric = try HTTP1Client(base: URL(string: "http://[::1]:\(six.port)")!, timeout: .seconds(10), maxBodyBytes: 1 << 20)
        #expect(numeric.host == "::1" && numeric.hostHeader == "[::1]:\(six.port)")
        #expect(try await numeric.send(Self.get).body == Array("{\"v\":6}".utf8))
    }

    @Test func onlyHTTPURLs() {
        #expect(throws: HTTP1ClientError.unsupportedURL) { try HTTP1Client(base: URL(string: "https://relay.example")!, timeout: .seconds(1), maxBodyBytes: 1) }
    }

    /// `https://` relays, and any relay when the environment names a proxy for http (which
    /// libcurl honours and this client does not), stay on URLSession.
    @Test func httpsAndProxiedRelaysStayOnURLSession() {
        let session = RelayHTTP.makeSession()
        defer { session.invalidate() }
        func client(_ url: String, _ environment: [String: String] = [:]) -> HTTP1Client? {
            RelayHTTP(base: URL(string: url)!, token: nil, session: session, environment: environment).client
        }
        #expect(client("http://127.0.0.1:8470") != nil)
        #expect(client("http://relay.example", ["HTTP_PROXY": "http://proxy:3128", "no_proxy": "x"]) != nil)
        #expect(client("https://relay.example") == nil)
        #expect(client("http://relay.example", ["http_proxy": "http://proxy:3128"]) == nil)
        #expect(client("http://relay.example", ["ALL_PROXY": "socks5://proxy:1080"]) == nil)
    }

    /// No byte for `timeout`: given up, after about that long.
    @Test func aStalledAnswerTimesOut() async throws {
        let server = try ScriptedHTTPServer { peer, _ in
            guard peer.readRequest() != nil else { return }
            peer.waitForClose()
        }
        let client = try Self.client(server, timeout: .seconds(1))
        let started = ContinuousClock.now
        let failure = await Self.failure(client, Self.get)
        let took = ContinuousClock.now - started
        #expect(failure == .timedOut)
        #expect(took >= .milliseconds(950) && took < .seconds(5), "\(took)")
    }

    /// The timeout counts from the last byte: an answer that keeps coming, slowly, or that
    /// comes after a wait shorter than the timeout (a long-poll) is not cut.
    @Test func aSlowButProgressingAnswerIsNotCut() async throws {
        let server = try ScriptedHTTPServer { peer, _ in
            guard peer.readRequest() != nil else { return }
            usleep(600_000)
            peer.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            for _ in 0..<4 {
                usleep(600_000)
                peer.write("1\r\nx\r\n")
            }
            peer.write("0\r\n\r\n")
        }
        let client = try Self.client(server, timeout: .seconds(1))
        #expect(try await client.send(Self.get).body == Array("xxxx".utf8))
    }

    /// A cancelled request ends at once, and its connection is closed, not reused.
    @Test func aCancelledRequestEndsPromptlyAndItsConnectionIsClosed() async throws {
        let server = try ScriptedHTTPServer { peer, index in
            guard peer.readRequest() != nil else { return }
            if index == 0 { peer.waitForClose() } else { peer.answer() }
        }
        let client = try Self.client(server, timeout: .seconds(60))
        let waiting = Task { await Self.failure(client, Self.get) }
        try await Task.sleep(for: .milliseconds(300))
        let cancelled = ContinuousClock.now
        waiting.cancel()
        let failure = await waiting.value
        let took = ContinuousClock.now - cancelled
        #expect(failure == .cancelled)
        print("HTTP1Client: a cancelled request ended \(took) after the cancel")
        #expect(took < .milliseconds(500), "\(took)")
        #expect(try await client.send(Self.get).status == 200)
        #expect(server.connections == 2)

        // Cancelled before it starts: nothing is sent.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await Self.failure(client, Self.get)
        }
        #expect(await early.value == .cancelled)
    }

    @Test func aBodyOverTheCapIsRefused() async throws {
        let server = try ScriptedHTTPServer { peer, _ in
            guard peer.readRequest() != nil else { return }
            peer.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            for _ in 0..<10 { peer.write("400\r\n" + String(repeating: "a", count: 1024) + "\r\n") }
        }
        let client = try Self.client(server, maxBodyBytes: 4096)
        #expect(await Self.failure(client, Self.get) == .notHTTP(.bodyTooLarge(limit: 4096)))
    }

    /// Blobs go from and to files in pieces: a PUT's body is the file's bytes with its length,
    /// a 200's body goes to the file (the response keeps none), a 404 or an error keeps its
    /// own body in the response and the file is left empty.
    @Test func transferStreamsBodiesFromAndToFiles() async throws {
        let blob = (0..<(3 << 20) + 17).map { UInt8(truncatingIfNeeded: $0 &* 131) }
        let server = try ScriptedHTTPServer { peer, _ in
            while let (head, body) = peer.readRequest() {
                if head.hasPrefix("PUT") {
                    peer.answer(body == blob ? #"{"stored":true}"# : #"{"stored":false}"#, status: "201 Created")
                } else if head.contains("/missing") {
                    peer.answer(#"{"error":"not_found"}"#, status: "404 Not Found")
                } else if head.contains("/chunked") {
                    peer.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                    for piece in stride(from: 0, to: blob.count, by: 100_000) {
                        let part = Array(blob[piece..<min(piece + 100_000, blob.count)])
                        peer.write(String(part.count, radix: 16) + "\r\n")
                        peer.write(part)
                        peer.write("\r\n")
                    }
                    peer.write("0\r\n\r\n")
                } else {
                    peer.write("HTTP/1.1 200 OK\r\nContent-Length: \(blob.count)\r\n\r\n")
                    peer.write(blob)
                }
            }
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("http1-transfer-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data(blob).write(to: URL(fileURLWithPath: dir + "/up"))
        let client = try Self.client(server, maxBodyBytes: 1 << 10)
        let put = try await client.transfer(HTTP1Request(method: "PUT", target: "/b/k"), bodyFrom: dir + "/up", maxBodyBytes: 1 << 10)
        #expect(put.status == 201 && put.body == Array(#"{"stored":true}"#.utf8))
        #expect(server.requests.last?.contains("Content-Length: \(blob.count)\r\n") == true)
        for target in ["/b/k", "/b/chunked"] {
            let got = try await client.transfer(HTTP1Request(method: "GET", target: target), bodyTo: dir + "/down", maxBodyBytes: 1 << 30)
            #expect(got.status == 200 && got.body.isEmpty)
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/down")) == Data(blob), "\(target)")
        }
        let missing = try await client.transfer(HTTP1Request(method: "GET", target: "/b/missing"), bodyTo: dir + "/down", maxBodyBytes: 1 << 30)
        #expect(missing.status == 404 && missing.body == Array(#"{"error":"not_found"}"#.utf8))
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/down")).isEmpty)
        #expect(server.connections == 1, "one kept-alive connection")
        // A body over the cap is refused even when it goes to a file.
        var capped: HTTP1ClientError?
        do throws(HTTP1ClientError) {
            _ = try await client.transfer(HTTP1Request(method: "GET", target: "/b/k"), bodyTo: dir + "/down", maxBodyBytes: 1 << 20)
        } catch {
            capped = error
        }
        #expect(capped == HTTP1ClientError.notHTTP(.bodyTooLarge(limit: 1 << 20)))
    }

    /// A server that resets the connection while an upload's body is still being sent (it read
    /// 20,000 bytes), or inside a download's response head: the transfer fails with the
    /// reason, nothing traps (URLSession's file upload does: "'try!' ... libcurl.Easy Code=43").
    @Test func aTransferResetMidwayFails() async throws {
        let server = try ScriptedHTTPServer { peer, index in
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(peer.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            if index == 0 {
                peer.read(20_000)
            } else {
                peer.read(1)
                peer.write("HTTP/1.1 200 OK\r\nContent-Length: 3000000\r\nDa")
                usleep(20_000)
            }
            peer.close()
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("http1-reset-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data(repeating: 7, count: 30 << 20).write(to: URL(fileURLWithPath: dir + "/up"))
        let client = try Self.client(server)
        var failures: [HTTP1ClientError] = []
        for (bodyFrom, bodyTo) in [(dir + "/up", nil), (nil, dir + "/down")] as [(String?, String?)] {
            do throws(HTTP1ClientError) {
                _ = try await client.transfer(HTTP1Request(method: bodyFrom == nil ? "GET" : "PUT", target: "/b/k"),
                                              bodyFrom: bodyFrom, bodyTo: bodyTo, maxBodyBytes: 1 << 30)
                Issue.record("the transfer did not fail")
            } catch {
                failures.append(error)
            }
        }
        #expect(failures.count == 2, "\(failures)")
        for failure in failures {
            switch failure {
            case .connectionFailed, .closedMidAnswer, .closedBeforeAnswer: break
            default: Issue.record("unexpected: \(failure)")
            }
        }
    }

    /// A server that reads 20,000 bytes of a request and resets the connection.
    static func resettingAfter20000Bytes() throws -> ScriptedHTTPServer {
        try ScriptedHTTPServer { peer, _ in
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            setsockopt(peer.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
            peer.read(20_000)
            peer.close()
        }
    }

    /// The same reset against URLSession (https relays): an upload of a blob of up to 64 MiB
    /// fails with the reset instead of trapping in FoundationNetworking's file upload.
    @Test func aURLSessionUploadResetMidBodyFails() async throws {
        let server = try Self.resettingAfter20000Bytes()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("session-reset-\(UUID().uuidString)")
        try Data(repeating: 7, count: 3 << 20).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let session = RelaySession.makeURLSession(timeout: .seconds(10))
        defer { session.invalidateAndCancel() }
        for _ in 0..<5 {
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/v1/owners/x/blobs/k")!)
            request.httpMethod = "PUT"
            await #expect(throws: (any Error).self) { _ = try await SessionCall.upload(session, request, fromFile: file) }
        }
    }

    /// A blob over the in-memory limit is streamed from its file: a reset mid-body fails the
    /// upload (before, `uploadTask(fromFile:)` trapped and ended the process), and an upload
    /// the server takes arrives whole, chunked, without a Content-Length.
    @Test func aURLSessionUploadOverTheMemoryLimitIsStreamedAndAResetFails() async throws {
        let reset = try Self.resettingAfter20000Bytes()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("session-stream-\(UUID().uuidString)")
        let bytes = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let session = RelaySession.makeURLSession(timeout: .seconds(10))
        defer { session.invalidateAndCancel() }
        for _ in 0..<3 {
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(reset.port)/v1/owners/x/blobs/k")!)
            request.httpMethod = "PUT"
            await #expect(throws: (any Error).self) { _ = try await SessionCall.upload(session, request, fromFile: file, inMemoryUpTo: 1 << 20) }
        }
        let received = Mutex<(head: String, body: [UInt8])?>(nil)
        let taking = try ScriptedHTTPServer { peer, _ in
            guard let request = peer.readChunkedRequest() else { return }
            received.withLock { $0 = request }
            peer.answer("{}", status: "201 Created", headers: "Connection: close\r\n")
        }
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(taking.port)/v1/owners/x/blobs/k")!)
        request.httpMethod = "PUT"
        let (_, response) = try await SessionCall.upload(session, request, fromFile: file, inMemoryUpTo: 1 << 20)
        #expect((response as? HTTPURLResponse)?.statusCode == 201)
        let got = try #require(received.withLock { $0 })
        #expect(got.head.lowercased().contains("transfer-encoding: chunked") && !got.head.lowercased().contains("content-length"), "\(got.head)")
        #expect(got.body.count == bytes.count && got.body == bytes)
    }

    /// A relay that refuses a large body answers before reading it all and closes: the answer
    /// is what the client reports, not the broken send.
    @Test func anEarlyAnswerToALargeBodyIsRead() async throws {
        let server = try ScriptedHTTPServer { peer, _ in
            peer.read(4096)
            peer.write("HTTP/1.1 413 Content Too Large\r\nConnection: close\r\nContent-Length: 23\r\n\r\n{\"error\":\"too_large\"}\r\n")
            usleep(50_000)
        }
        let client = try Self.client(server)
        let response = try await client.send(Self.post(String(repeating: "x", count: 32 << 20)))
        #expect(response.status == 413 && !response.keepAlive)
    }
}

/// `HTTP1Client`'s failures through `RelayHTTP`, in the words users read (the same as for
/// URLSession's failures), never with the token.
@Suite struct RelayHTTPClientFailureTests {
    static let token = "tok-SECRET-never-shown"

    /// What `RelayHTTP.send` of a GET (or a POST of `body` bytes) to `base` throws.
    static func failure(_ base: String, body: Int = 0, timeout: Duration = .seconds(10)) async -> TransportFailure? {
        let session = RelayHTTP.makeSession(timeout: timeout)
        defer { session.invalidate() }
        let http = RelayHTTP(base: URL(string: base)!, token: token, session: session)
        #expect(http.client != nil)
        var request = http.request(body > 0 ? "POST" : "GET", "v1/owners/x/events")
        if body > 0 { request.httpBody = Data(repeating: 0x61, count: body) }
        do {
            _ = try await http.send(request, what: "pulling")
            return nil
        } catch {
            #expect(!error.message.contains(token), "\(error)")
            return error
        }
    }

    static func server(_ serve: @escaping @Sendable (ScriptedHTTPServer.Peer) -> Void) throws -> ScriptedHTTPServer {
        try ScriptedHTTPServer { peer, _ in serve(peer) }
    }

    @Test func refusedSaysSo() async throws {
        // A port nothing listens on: one the kernel gave and took back.
        let gone = try ScriptedHTTPServer { _, _ in }
        let port = gone.port
        gone.stop()
        let failure = await Self.failure("http://127.0.0.1:\(port)")
        #expect(failure?.kind == "unavailable")
        #expect(failure?.message.contains("cannot reach the relay at http://127.0.0.1:\(port): the connection was refused (is ferry-relay running and listening there?)") == true,
                "\(String(describing: failure))")
    }

    @Test func anUnknownHostSaysItDoesNotResolve() async throws {
        let failure = await Self.failure("http://no-such-host.invalid:8080")
        #expect(failure?.message.contains("its host name does not resolve") == true, "\(String(describing: failure))")
    }

    /// A name's lookup runs beside the request: one that hangs (no network, a DNS server that
    /// does not answer) ends the request at its timeout, or at once when it is cancelled; a
    /// numeric address never waits for a lookup; a name that resolves connects.
    @Test func aHangingLookupEndsAtTheTimeoutOrCancellation() throws {
        let hanging: HTTP1Resolver.Lookup = { host, port, numericOnly in
            if numericOnly { return .failure(.unresolvable(host: host, detail: "not numeric")) }
            Thread.sleep(forTimeInterval: 8)
            return .failure(.unresolvable(host: host, detail: "gave up"))
        }
        var started = ContinuousClock.now
        #expect(throws: HTTP1ClientError.timedOut) {
            _ = try HTTP1Connection.open(host: "relay.test", port: 80, timeout: .milliseconds(400), cancellation: HTTP1Cancellation(),
                                         lookup: hanging)
        }
        #expect(ContinuousClock.now - started < .seconds(4))

        let cancellation = try HTTP1Cancellation()
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { cancellation.cancel() }
        started = ContinuousClock.now
        #expect(throws: HTTP1ClientError.cancelled) {
            _ = try HTTP1Connection.open(host: "relay.test", port: 80, timeout: .seconds(30), cancellation: cancellation, lookup: hanging)
        }
        #expect(ContinuousClock.now - started < .seconds(4))

        // A name that resolves (here to the loopback address of a listening server) connects,
        // and a numeric address is answered without the background lookup.
        let server = try ScriptedHTTPServer { peer, _ in _ = peer.readRequest() }
        let byName: HTTP1Resolver.Lookup = { host, port, numericOnly in
            if numericOnly { return HTTP1Resolver.system(host, port, true) }
            return host == "relay.test" ? HTTP1Resolver.system("127.0.0.1", port, true) : .failure(.unresolvable(host: host, detail: "unknown"))
        }
        _ = try HTTP1Connection.open(host: "relay.test", port: server.port, timeout: .seconds(5), cancellation: HTTP1Cancellation(),
                                     lookup: byName)
        let numericOnly: HTTP1Resolver.Lookup = { host, port, numericOnly in
            numericOnly ? HTTP1Resolver.system(host, port, true) : .failure(.unresolvable(host: host, detail: "looked up in the background"))
        }
        _ = try HTTP1Connection.open(host: "127.0.0.1", port: server.port, timeout: .seconds(5), cancellation: HTTP1Cancellation(),
                                     lookup: numericOnly)
        #expect(throws: HTTP1ClientError.unresolvable(host: "relay.test", detail: "unknown")) {
            _ = try HTTP1Connection.open(host: "relay.test", port: server.port, timeout: .seconds(5), cancellation: HTTP1Cancellation(),
                                         lookup: { host, port, numericOnly in
                                             numericOnly ? .failure(.unresolvable(host: host, detail: "not numeric"))
                                                 : .failure(.unresolvable(host: host, detail: "unknown"))
                                         })
        }
    }

    @Test func aTimeoutIsTheTimedOutTextAndNilForARetryWithLess() async throws {
        let server = try Self.server { peer in
            guard peer.readRequest() != nil else { return }
            peer.waitForClose()
        }
        let failure = await Self.failure("http://127.0.0.1:\(server.port)", timeout: .seconds(1))
        #expect(failure?.message.contains("did not answer for 1 s") == true, "\(String(describing: failure))")
        let session = RelayHTTP.makeSession(timeout: .seconds(1))
        defer { session.invalidate() }
        let http = RelayHTTP(base: URL(string: "http://127.0.0.1:\(server.port)")!, token: Self.token, session: session)
        #expect(try await http.sendUnlessTimedOut(http.request("POST", "v1/owners/x/events"), what: "pushing") == nil)
    }

    @Test func aConnectionClosedBeforeAnyAnswerSaysSo() async throws {
        let server = try Self.server { peer in peer.readRequest() }
        let failure = await Self.failure("http://127.0.0.1:\(server.port)")
        #expect(failure?.message.contains("the connection was closed before any answer (the relay, or something between, dropped it)") == true,
                "\(String(describing: failure))")
    }

    @Test func aConnectionThatBreaksMidBodyGivesTheSystemsWords() async throws {
        let server = try Self.server { peer in peer.read(16) }
        let failure = await Self.failure("http://127.0.0.1:\(server.port)", body: 8 << 20)
        let message = failure?.message ?? ""
        #expect(message.contains("the connection failed: ") || message.contains("closed before any answer"), "\(message)")
        #expect(!message.contains("not HTTP") && !message.contains("network error"), "\(message)")
    }

    @Test func notHTTPSaysSo() async throws {
        let server = try Self.server { peer in
            peer.readRequest()
            peer.write("SSH-2.0-OpenSSH_9.6\r\n")
        }
        let failure = await Self.failure("http://127.0.0.1:\(server.port)")
        #expect(failure?.message.contains("the answer is not HTTP (its first line is not an HTTP/1.x status line)") == true,
                "\(String(describing: failure))")
    }

    @Test func statusesMapAsBefore() async throws {
        let server = try Self.server { peer in
            guard peer.readRequest() != nil else { return }
            peer.answer(#"{"error":"rate_limited","message":"slow down"}"#, status: "429 Too Many Requests", headers: "Retry-After: 7\r\n")
        }
        let failure = await Self.failure("http://127.0.0.1:\(server.port)")
        #expect(failure == .rateLimited(retryAfter: .seconds(7), "pulling: the relay answered 429 (rate_limited): slow down"))
        #expect(server.requests.first?.contains("\r\nAuthorization: Bearer \(Self.token)\r\n") == true)
    }

    /// A redirect is not followed (the token would go wherever it points): the error names
    /// where it points and what to do.
    @Test func aRedirectIsNotFollowedAndSaysWhere() async throws {
        let server = try Self.server { peer in
            guard peer.readRequest() != nil else { return }
            peer.answer("", status: "301 Moved Permanently", headers: "Location: https://relay.example.org/\r\n")
        }
        let failure = await Self.failure("http://127.0.0.1:\(server.port)")
        guard case .unavailable(let text)? = failure else {
            Issue.record("\(String(describing: failure))")
            return
        }
        #expect(text.contains("answered 301") && text.contains("redirects to https://relay.example.org/"), "\(text)")
        #expect(server.requests.count == 1)
    }

    /// Every `HTTP1ClientError` has its words; none is a bare enum case name.
    @Test func everyClientErrorHasWords() {
        let errors: [HTTP1ClientError] = [
            .unsupportedURL, .invalidRequest, .unresolvable(host: "h", detail: "Name or service not known"), .connectFailed(errno: ECONNREFUSED),
            .connectFailed(errno: EHOSTUNREACH), .connectFailed(errno: ENETUNREACH), .timedOut, .connectionFailed(sending: true, errno: EPIPE),
            .connectionFailed(sending: false, errno: ECONNRESET), .closedBeforeAnswer, .closedMidAnswer, .notHTTP(.badChunkSize),
            .notHTTP(.bodyTooLarge(limit: 64 << 20)), .cancelled, .system(call: "poll", errno: ENOMEM),
        ]
        let expected = [
            "the URL is not an http or https URL", "a request header holds a line break", "its host name does not resolve",
            "the connection was refused (is ferry-relay running and listening there?)", "the connection failed: No route to host",
            "this machine has no network", "no answer in time", "the connection failed: Broken pipe (sending the request)",
            "the connection failed: Connection reset by peer (reading the answer)",
            "the connection was closed before any answer (the relay, or something between, dropped it)",
            "the connection was lost (closed in the middle of the answer)", "the answer is not HTTP (a chunk size is malformed)",
            "its answer is over the 64 MiB a reply may have", "cancelled", "the connection failed: poll: Cannot allocate memory",
        ]
        for (error, words) in zip(errors, expected) {
            #expect(RelayHTTP.reason(error as any Error) == words)
        }
    }
}
