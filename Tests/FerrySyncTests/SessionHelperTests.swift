import FerryJSON
import FerryTestSupport
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc
import Synchronization
import Testing
@testable import FerrySync

/// The https helper: its frames, split anywhere, and a real helper process (the built ferryd
/// started with `--https-helper`) making requests to a scripted server, cancelled, and ending
/// in the middle of one.
@Suite struct SessionHelperTests {
    static let first = SessionHelperFrame(header: ["id": 1, "op": "data", "url": "https://relay.example/v1/x"], body: Array("[1,2,3]".utf8))
    static let second = SessionHelperFrame(header: ["id": 2, "status": 204, "headers": ["Retry-After": "5"]])

    @Test func framesSplitAtEveryByteParseOnceWhole() throws {
        let bytes = Self.first.encoded() + Self.second.encoded()
        let firstLength = Self.first.encoded().count
        for split in 0...bytes.count {
            let parsed = try SessionHelperFrame.parse(bytes[0..<split])
            if split < firstLength {
                #expect(parsed == nil, "split at \(split)")
            } else {
                #expect(parsed?.frame == Self.first && parsed?.length == firstLength, "split at \(split)")
                let rest = try SessionHelperFrame.parse(bytes[firstLength..<split])
                #expect(split == bytes.count ? rest?.frame == Self.second : rest == nil, "split at \(split)")
            }
        }
    }

    @Test func oversizeLengthsAndHeadersThatAreNotObjectsAreRefused() throws {
        func frame(head: UInt32, body: UInt32, _ rest: [UInt8] = []) -> ArraySlice<UInt8> {
            var out: [UInt8] = []
            for n in [head, body] { withUnsafeBytes(of: n.bigEndian) { out.append(contentsOf: $0) } }
            return (out + rest)[...]
        }
        // Known from the lengths alone, before the bytes arrive.
        #expect(throws: SessionHelperFrame.Malformed.self) { try SessionHelperFrame.parse(frame(head: UInt32(SessionHelperFrame.maxHeaderBytes + 1), body: 0)) }
        #expect(throws: SessionHelperFrame.Malformed.self) { try SessionHelperFrame.parse(frame(head: 2, body: UInt32(SessionHelperFrame.maxBodyBytes + 1))) }
        #expect(throws: SessionHelperFrame.Malformed.self) { try SessionHelperFrame.parse(frame(head: 2, body: 0, Array("[]".utf8))) }
        #expect(throws: SessionHelperFrame.Malformed.self) { try SessionHelperFrame.parse(frame(head: 2, body: 0, Array("{x".utf8))) }
        // Whole lengths, the body not there yet: wait for it.
        #expect(try SessionHelperFrame.parse(frame(head: 2, body: 1, Array("{}".utf8))) == nil)
    }

    /// A helper started from the built ferryd; `log` collects what it says.
    static func helper(pingInterval: Duration = .seconds(5), silenceLimit: Duration = .seconds(20)) throws -> (SessionHelper, Said) {
        let ferryd = try BuiltExecutable.path("ferryd")
        let said = Said()
        return (SessionHelper(executable: ferryd, name: "ferryd-test-helper", log: { m in said.lines.withLock { $0.append(m) } },
                              pingInterval: pingInterval, silenceLimit: silenceLimit), said)
    }

    final class Said: Sendable {
        let lines = Mutex<[String]>([])
    }

    /// A server that leaves `GET /wait` unanswered (until the client goes) and answers `body`
    /// to anything else, one request per connection.
    static func waitingServer(answering body: String) throws -> ScriptedHTTPServer {
        try ScriptedHTTPServer { peer, _ in
            guard let (head, _) = peer.readRequest() else { return }
            if head.hasPrefix("GET /wait") { peer.waitForClose(timeout: 30) } else { peer.answer(body) }
        }
    }

    static func session(_ helper: SessionHelper) -> RelaySession {
        RelaySession(timeout: .seconds(10), helper: helper)
    }

    @Test func requestsAndFilesGoThroughTheHelper() async throws {
        let server = try ScriptedHTTPServer { peer, _ in
            while let (head, body) = peer.readRequest() {
                if head.hasPrefix("GET /blob") {
                    peer.answer(String(repeating: "b", count: 70_000), headers: "X-Kind: blob\r\n")
                } else {
                    peer.answer("{\"got\":\(body.count)}", status: head.hasPrefix("PUT") ? "201 Created" : "200 OK", headers: "Retry-After: 7\r\n")
                }
            }
        }
        let (helper, _) = try Self.helper()
        defer { helper.stop() }
        let session = Self.session(helper)
        let base = "http://127.0.0.1:\(server.port)"
        var post = URLRequest(url: URL(string: base + "/v1/events")!)
        post.httpMethod = "POST"
        post.httpBody = Data("[1,2,3]".utf8)
        post.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let (data, response) = try await session.data(post)
        #expect(String(decoding: data, as: UTF8.self) == "{\"got\":7}")
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Retry-After") == "7")
        #expect(server.requests.last?.contains("Content-Type: application/json") == true)

        let dir = TempDir("helper-files")
        let file = URL(fileURLWithPath: dir.path + "/up")
        try Data(repeating: 7, count: 50_000).write(to: file)
        var put = URLRequest(url: URL(string: base + "/v1/blobs/k")!)
        put.httpMethod = "PUT"
        let (uploaded, putResponse) = try await session.upload(put, fromFile: file)
        #expect(String(decoding: uploaded, as: UTF8.self) == "{\"got\":50000}")
        #expect((putResponse as? HTTPURLResponse)?.statusCode == 201)

        let target = URL(fileURLWithPath: dir.path + "/down")
        let got = try await session.download(URLRequest(url: URL(string: base + "/blob")!), to: target)
        #expect((got as? HTTPURLResponse)?.value(forHTTPHeaderField: "X-Kind") == "blob")
        #expect(try Data(contentsOf: target) == Data(repeating: UInt8(ascii: "b"), count: 70_000))
        let pid = try #require(helper.pid)
        // ps and pgrep show it by a name of its own, not as "exe".
        #expect((try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) == "ferryd-https\n")
    }

    /// A request whose task is cancelled ends (as in-process: a cancelled URLError), and the
    /// helper goes on serving.
    @Test func aCancelledRequestEndsAndTheHelperGoesOn() async throws {
        let server = try Self.waitingServer(answering: "{}")
        let (helper, _) = try Self.helper()
        defer { helper.stop() }
        let session = Self.session(helper)
        let base = "http://127.0.0.1:\(server.port)"
        let waiting = Task { try await session.data(URLRequest(url: URL(string: base + "/wait")!)) }
        #expect(try await eventually(.seconds(10)) { server.connections >= 1 })
        let started = ContinuousClock.now
        waiting.cancel()
        await #expect(throws: URLError.self) { _ = try await waiting.value }
        #expect(ContinuousClock.now - started < .seconds(10))
        let (data, _) = try await session.data(URLRequest(url: URL(string: base + "/now")!))
        #expect(String(decoding: data, as: UTF8.self) == "{}")
    }

    /// The helper ending in the middle of a request (killed here, as a trap would end it) fails
    /// that request with an error saying so, is logged, and the next request starts another.
    @Test func aHelperThatEndsFailsItsRequestsAndAnotherStarts() async throws {
        let server = try Self.waitingServer(answering: "{\"n\":2}")
        let (helper, said) = try Self.helper()
        defer { helper.stop() }
        let session = Self.session(helper)
        let base = "http://127.0.0.1:\(server.port)"
        let waiting = Task { try await session.data(URLRequest(url: URL(string: base + "/wait")!)) }
        #expect(try await eventually(.seconds(10)) { server.connections >= 1 })
        let first = try #require(helper.pid)
        kill(first, SIGILL)
        do {
            _ = try await waiting.value
            Issue.record("the request outlived its helper")
        } catch {
            let message = ((error as NSError).userInfo[NSLocalizedDescriptionKey] as? String) ?? ""
            #expect(message.contains("the helper process making the request (ferryd --https-helper) was ended by signal 4"), "\(message)")
        }
        #expect(said.lines.withLock { $0 }.contains { $0.contains("(pid \(first)) was ended by signal 4") && $0.contains("1 request in flight") },
                "\(said.lines.withLock { $0 })")
        let (data, _) = try await session.data(URLRequest(url: URL(string: base + "/again")!))
        #expect(String(decoding: data, as: UTF8.self) == "{\"n\":2}")
        #expect(helper.pid != nil && helper.pid != first)
    }

    /// A helper that stops answering (stopped here with SIGSTOP, as a stuck one would be) is
    /// ended once it has not answered its pings for the silence limit: its request fails
    /// saying so instead of waiting for ever (and holding ferryd's stop), and the next request
    /// starts another. An idle helper is left alone however long it is quiet.
    @Test func aHelperThatStopsAnsweringIsEndedAndItsRequestsFail() async throws {
        let server = try Self.waitingServer(answering: "{\"n\":3}")
        let (helper, said) = try Self.helper(pingInterval: .milliseconds(200), silenceLimit: .seconds(1))
        defer { helper.stop() }
        let session = Self.session(helper)
        let base = "http://127.0.0.1:\(server.port)"
        _ = try await session.data(URLRequest(url: URL(string: base + "/first")!))
        let first = try #require(helper.pid)
        try await Task.sleep(for: .seconds(2))   // idle past the limit: still the same helper
        #expect(helper.pid == first)
        let waiting = Task { try await session.data(URLRequest(url: URL(string: base + "/wait")!)) }
        #expect(try await eventually(.seconds(10)) { server.connections >= 2 })
        kill(first, SIGSTOP)
        let started = ContinuousClock.now
        do {
            _ = try await waiting.value
            Issue.record("the request outlived its stopped helper")
        } catch {
            let message = ((error as NSError).userInfo[NSLocalizedDescriptionKey] as? String) ?? ""
            #expect(message.contains("did not answer for 1 s and was ended"), "\(message)")
        }
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(said.lines.withLock { $0 }.contains { $0.contains("(pid \(first)) has not answered for") }, "\(said.lines.withLock { $0 })")
        let (data, _) = try await session.data(URLRequest(url: URL(string: base + "/again")!))
        #expect(String(decoding: data, as: UTF8.self) == "{\"n\":3}")
        #expect(helper.pid != nil && helper.pid != first)
    }

    /// Many requests at once through one helper each get their own answer (replies come back
    /// in any order, matched by id).
    @Test func concurrentRequestsGetTheirOwnAnswers() async throws {
        let server = try ScriptedHTTPServer { peer, _ in
            while let (head, _) = peer.readRequest() {
                let path = head.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
                if path.hasSuffix("/7") || path.hasSuffix("/23") { usleep(200_000) }   // some answer late
                peer.answer("{\"path\":\"\(path)\"}")
            }
        }
        let (helper, _) = try Self.helper()
        defer { helper.stop() }
        let session = Self.session(helper)
        let base = "http://127.0.0.1:\(server.port)"
        let answers = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for i in 0..<40 {
                group.addTask {
                    let (data, _) = try await session.data(URLRequest(url: URL(string: base + "/r/\(i)")!))
                    return (i, String(decoding: data, as: UTF8.self))
                }
            }
            var all: [Int: String] = [:]
            for try await (i, body) in group { all[i] = body }
            return all
        }
        #expect(answers.count == 40)
        #expect(answers.allSatisfy { $0.value == "{\"path\":\"/r/\($0.key)\"}" })
    }
}
